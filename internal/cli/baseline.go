package cli

import (
	"context"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	"github.com/reroll/reroll/internal/baseline"
)

// storedBaseline returns the baseline Reroll keeps for t in its baseline
// ConfigMaps (Settings.Baselines: the controller's --baselines in its
// namespace), the ConfigMap as NAMESPACE/NAME, and whether there is one
// for t's UID. Reroll keeps one there only for a workload it has not
// rolled yet (no record on it) whose unread keys changed after its
// installation (docs/design.md, "Install: no write per workload"). The
// entry's signature is not verified (the plugin holds no installation
// key): a forged entry can only change what the plugin predicts, never
// what Reroll does. Each namespace's ConfigMap is read once per session;
// one the user may not read, or that does not exist, holds nothing.
func (s *session) storedBaseline(ctx context.Context, t target) (baseline.Entry, string, bool) {
	ns, prefix, ok := strings.Cut(s.settings.Baselines, "/")
	if !ok || ns == "" || prefix == "" {
		return baseline.Entry{}, "", false
	}
	name := baseline.ConfigMapName(prefix, t.obj.GetNamespace())
	data, read := s.baselines[t.obj.GetNamespace()]
	if !read {
		var cm corev1.ConfigMap
		err := s.client.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &cm)
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsForbidden(err) {
			s.baselineNote = "could not read Reroll's baselines (" + ns + "/" + name + ": " + readError(err).Error() + "): a workload Reroll has not rolled yet follows the first-sight rule here"
		}
		data = cm.Data
		if s.baselines == nil {
			s.baselines = map[string]map[string]string{}
		}
		s.baselines[t.obj.GetNamespace()] = data
	}
	v, ok := data[baseline.DataKey(t.kind.Name(), t.obj.GetName())]
	if !ok {
		return baseline.Entry{}, "", false
	}
	e, ok := baseline.Peek(baseline.DataKey(t.kind.Name(), t.obj.GetName()), v)
	if !ok || e.UID != string(t.obj.GetUID()) {
		return baseline.Entry{}, "", false
	}
	return e, ns + "/" + name, true
}
