package halts

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reroll/reroll/internal/delivery"
	"github.com/reroll/reroll/internal/digest"
)

// Legacy is what an older Reroll left: its halt records, all in one
// ConfigMap named the prefix itself (no suffix, no label), by the set IDs
// of delivery.LegacySetID, and that ConfigMap's UID.
type Legacy struct {
	Halts map[string]*delivery.Halt
	UID   types.UID
}

// Legacy reads, from the API server, the one ConfigMap of halt records of
// a Reroll before one record per set: the active halts in it (a damaged
// entry is skipped), none when it does not exist. Read once at start, so
// that an upgrade releases no halt (Translate, then DropLegacy once they
// are recorded again).
func (s *Records) Legacy(ctx context.Context) (Legacy, error) {
	var cm corev1.ConfigMap
	err := s.r.Get(ctx, types.NamespacedName{Namespace: s.namespace, Name: s.prefix}, &cm)
	if apierrors.IsNotFound(err) {
		return Legacy{}, nil
	}
	if err != nil {
		return Legacy{}, fmt.Errorf("reading the halt records of an older Reroll %s/%s: %w", s.namespace, s.prefix, err)
	}
	out := Legacy{Halts: map[string]*delivery.Halt{}, UID: cm.UID}
	for id, v := range cm.Data {
		if h, err := delivery.ParseHalt(v); err == nil && h.Active() {
			out.Halts[id] = h
		}
	}
	return out, nil
}

// LegacyName is "<namespace>/<name>" of the one ConfigMap of an older
// Reroll's halt records.
func (s *Records) LegacyName() string { return s.namespace + "/" + s.prefix }

// DropLegacy deletes the one ConfigMap of an older Reroll's halt records
// (Legacy), if it is still the one with uid: its halts are recorded again,
// one signed record per set.
func (s *Records) DropLegacy(ctx context.Context, uid types.UID) error {
	err := s.c.Delete(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: s.namespace, Name: s.prefix}},
		client.Preconditions{UID: &uid})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("deleting the halt records of an older Reroll %s/%s: %w", s.namespace, s.prefix, err)
	}
	return nil
}

// Content is what Translate needs of an object's current content: its
// per-key digests and its whole content's digest, as the store keeps them.
type Content struct {
	Keys map[string]string
	SHA1 string
}

// Translate returns the halts to record for an older Reroll's halts
// (legacy, by delivery.LegacySetID): each under its own ID (the workloads
// that rolled for it name it), and under the set ID of today
// (delivery.SetID under k, in scope(namespace), delivery.Order.Scope) of
// each changed object the halt names whose current content still is the
// halted one (its LegacySetID is the halt's), so the workloads still held
// for it stay held when they join today's set. A changed object whose
// content changed since belongs to a newer set, which the halt does not
// hold. content returns a ConfigMap's or Secret's current content, false
// when it is gone; its error is Translate's.
func Translate(k digest.Key, legacy map[string]*delivery.Halt, scope func(namespace string) string, content func(kind, namespace, name string) (Content, bool, error)) (map[string]delivery.Halt, error) {
	out := map[string]delivery.Halt{}
	for id, h := range legacy {
		if !h.Active() {
			continue
		}
		out[id] = *h
		for _, o := range h.Objects {
			parts := strings.SplitN(o, "/", 3)
			if len(parts) != 3 || (parts[0] != "ConfigMap" && parts[0] != "Secret") {
				continue
			}
			kind, ns, name := parts[0], parts[1], parts[2]
			c, ok, err := content(kind, ns, name)
			if err != nil {
				return nil, err
			}
			if delivery.LegacySetID(kind, name, c.Keys, !ok) != id {
				continue
			}
			now := delivery.SetID(k, scope(ns), kind, name, c.SHA1, !ok)
			if _, had := out[now]; !had {
				out[now] = *h
			}
		}
	}
	return out, nil
}
