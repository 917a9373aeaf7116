package controller

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reroll/reroll/internal/annotation"
	"github.com/reroll/reroll/internal/workload"
)

// pauseAction is what pause decided for one reconcile.
type pauseAction struct {
	paused, resumed bool
	// period is the pause period that started.
	period time.Duration
	// requeueAfter is when the pause ends, from now; 0 when none runs.
	requeueAfter time.Duration
}

// pause applies Reloader's pause-period to a Deployment, in desired. A
// rollout Reroll triggers on a Deployment with a pause period also sets
// spec.paused and records the time in the paused-at annotation
// (deployment.reloader.stakater.com/paused-at, RFC 3339 UTC, as Reloader
// writes it); once the period has passed, a later reconcile clears both and
// the Deployment rolls everything that changed meanwhile at once. The state
// lives on the Deployment, so a restart of Reroll neither loses nor extends
// the pause. A Deployment paused by someone else is left paused.
func (r *WorkloadReconciler) pause(desired client.Object, optIn annotation.OptIn, rolling bool, now time.Time) pauseAction {
	p, ok := r.Kind.(workload.Pausable)
	if !ok {
		return pauseAction{}
	}
	key := r.Options.Annotations.Names.PausedAt
	if at, has := desired.GetAnnotations()[key]; has {
		start, err := time.Parse(time.RFC3339, at)
		end := start.Add(optIn.PausePeriod)
		if err == nil && optIn.PausePeriod > 0 && now.Before(end) {
			return pauseAction{requeueAfter: end.Sub(now)}
		}
		p.SetPaused(desired, false)
		setAnnotation(desired, key, "")
		return pauseAction{resumed: true}
	}
	if rolling && optIn.PausePeriod > 0 && !p.Paused(desired) {
		p.SetPaused(desired, true)
		setAnnotation(desired, key, now.UTC().Format(time.RFC3339))
		return pauseAction{paused: true, period: optIn.PausePeriod, requeueAfter: optIn.PausePeriod}
	}
	return pauseAction{}
}

// report logs and records an Event for a pause that started or ended.
func (a pauseAction) report(ctx context.Context, rec record.EventRecorder, obj client.Object) {
	log := ctrl.LoggerFrom(ctx)
	switch {
	case a.paused:
		log.Info("Paused Deployment for its pause period", "period", a.period.String())
		rec.Eventf(obj, corev1.EventTypeNormal, ReasonPaused, "Paused for %s so that further changes join this rollout", a.period)
	case a.resumed:
		log.Info("Resumed Deployment after its pause period")
		rec.Eventf(obj, corev1.EventTypeNormal, ReasonResumed, "Resumed after the pause period")
	}
}
