package state

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reroll/reroll/internal/plan"
	"github.com/reroll/reroll/internal/workload"
)

// InstalledAtAnnotation is the annotation on the digest key Secret that
// holds Reroll's installation time (plan.InstalledAtAnnotation).
const InstalledAtAnnotation = plan.InstalledAtAnnotation

// LoadInstalledAt returns Reroll's installation time: InstalledAtAnnotation
// of the digest key Secret name. A Secret without it (provided by the user,
// or made by a Reroll before the first-sight rule) gets it now, by an update
// guarded by the Secret's resourceVersion, so that two replicas starting at
// once agree on the first write. It returns an error when the Secret cannot
// be read or written. c must read from the API server.
func LoadInstalledAt(ctx context.Context, c client.Client, name types.NamespacedName, now time.Time) (time.Time, error) {
	var at time.Time
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var s corev1.Secret
		if err := c.Get(ctx, name, &s); err != nil {
			return err
		}
		if t, ok := plan.InstalledAt(s.Annotations); ok {
			at = t
			return nil
		}
		at = now.UTC().Truncate(time.Second)
		if s.Annotations == nil {
			s.Annotations = map[string]string{}
		}
		s.Annotations[InstalledAtAnnotation] = at.Format(time.RFC3339)
		return c.Update(ctx, &s, client.FieldOwner(workload.FieldManager))
	})
	if err != nil {
		return time.Time{}, fmt.Errorf("reading or writing the installation time (annotation %s) of the digest key Secret %s: %w", InstalledAtAnnotation, name, err)
	}
	return at, nil
}

// InstallationInstalledAtData is the data key of the installation
// ConfigMap (PublishInstalledAt) that holds Reroll's installation time
// (RFC 3339, UTC).
const InstallationInstalledAtData = "installed-at"

// PublishInstalledAt writes at, Reroll's installation time
// (LoadInstalledAt), into the ConfigMap name (--installation-configmap, in
// Reroll's namespace), creating it when it does not exist: the kubectl
// plugin reads it there, so that whoever runs `kubectl reroll plan` or
// `why` needs no access to the digest key Secret (whose readers can sign
// Reroll's state and test guesses against its digests). The ConfigMap holds
// nothing else and nothing secret. A ConfigMap that holds the time already
// is left as it is. c must read from the API server.
func PublishInstalledAt(ctx context.Context, c client.Client, name types.NamespacedName, at time.Time) error {
	value := at.UTC().Format(time.RFC3339)
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var cm corev1.ConfigMap
		err := c.Get(ctx, name, &cm)
		if apierrors.IsNotFound(err) {
			cm = corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: name.Namespace, Name: name.Name,
				Labels: map[string]string{"app.kubernetes.io/name": "reroll"}},
				Data: map[string]string{InstallationInstalledAtData: value}}
			if err := c.Create(ctx, &cm, client.FieldOwner(workload.FieldManager)); apierrors.IsAlreadyExists(err) {
				return apierrors.NewConflict(corev1.Resource("configmaps"), name.Name, err)
			} else {
				return err
			}
		}
		if err != nil {
			return err
		}
		if cm.Data[InstallationInstalledAtData] == value {
			return nil
		}
		if cm.Data == nil {
			cm.Data = map[string]string{}
		}
		cm.Data[InstallationInstalledAtData] = value
		return c.Update(ctx, &cm, client.FieldOwner(workload.FieldManager))
	})
	if err != nil {
		return fmt.Errorf("writing the installation time into ConfigMap %s: %w", name, err)
	}
	return nil
}
