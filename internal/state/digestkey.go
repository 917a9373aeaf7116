package state

import (
	"context"
	"crypto/rand"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reroll/reroll/internal/digest"
	"github.com/reroll/reroll/internal/workload"
)

// DigestKeyData is the data key of the digest key Secret that holds the
// installation key (digest.MinKeyBytes random bytes).
const DigestKeyData = "key"

// DigestKeyPreviousData is the data key of the digest key Secret that holds,
// during a rotation, the key being replaced: records made under it are
// compared under it, so that a change made during the rotation still rolls,
// then made again under the new key (docs/security.md, "Rotating the digest
// key"). Removed by hand once every record names the new key.
const DigestKeyPreviousData = "previous"

// The digest key Secret lives in Reroll's own namespace and is granted by
// the chart's and config/rbac's Role there (get on that name, create), not
// by the base ClusterRole, which must stay least-privilege.

// LoadDigestKey reads the installation key from the Secret name (and the
// key it replaces, DigestKeyPreviousData, during a rotation), creating
// it with a new random key when it does not exist. Two replicas starting at
// once may both try to create it: the one that loses gets AlreadyExists and
// reads the winner's key, so every replica ends with the same key. c must
// read from the API server (not a cache that is not started yet).
func LoadDigestKey(ctx context.Context, c client.Client, name types.NamespacedName) (digest.Key, error) {
	var s corev1.Secret
	err := c.Get(ctx, name, &s)
	if apierrors.IsNotFound(err) {
		secret := make([]byte, digest.MinKeyBytes)
		if _, err := rand.Read(secret); err != nil {
			return digest.Key{}, fmt.Errorf("generating the digest key: %w", err)
		}
		s = corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: name.Namespace, Name: name.Name, Labels: map[string]string{"app.kubernetes.io/name": "reroll"},
				// Created now: Reroll is installed now (LoadInstalledAt),
				// and no record was ever made under the legacy scheme of
				// this key (LoadLegacyRecordsUntil).
				// Nor was state signed under the v1 key derivation
				// (LoadV1DerivationsUntil).
				Annotations: map[string]string{InstalledAtAnnotation: time.Now().UTC().Format(time.RFC3339),
					LegacyRecordsUntilAnnotation: time.Now().UTC().Format(time.RFC3339),
					V1DerivationsUntilAnnotation: time.Now().UTC().Format(time.RFC3339)}},
			Type: corev1.SecretTypeOpaque,
			Data: map[string][]byte{DigestKeyData: secret},
		}
		err = c.Create(ctx, &s, client.FieldOwner(workload.FieldManager))
		if apierrors.IsAlreadyExists(err) {
			// Another replica created it first: use its key.
			err = c.Get(ctx, name, &s)
		}
	}
	if err != nil {
		return digest.Key{}, fmt.Errorf("reading or creating the digest key Secret %s: %w", name, err)
	}
	k, err := digest.NewKey(s.Data[DigestKeyData])
	if err != nil {
		return digest.Key{}, fmt.Errorf("digest key Secret %s, key %q: %w", name, DigestKeyData, err)
	}
	if previous, ok := s.Data[DigestKeyPreviousData]; ok {
		if k, err = k.WithPrevious(previous); err != nil {
			return digest.Key{}, fmt.Errorf("digest key Secret %s, key %q: %w", name, DigestKeyPreviousData, err)
		}
	}
	return k, nil
}

// LegacyRecordsUntilAnnotation is the annotation on the digest key Secret
// that holds the migration deadline of the legacy digest scheme (RFC 3339,
// UTC), written once (LoadLegacyRecordsUntil): until then a record that
// names the legacy scheme of a key (digest.Key.Legacy) is compared under
// it, once per object change; from then on it counts as a record of
// another key (made again, without a rollout). A tenant can write the
// legacy scheme's ID on a workload of their own: the deadline bounds how
// long that makes Reroll compare values of their choosing under it.
const LegacyRecordsUntilAnnotation = "reroll.dev/legacy-records-until"

// DefaultLegacyGrace is how long after the first start of a Reroll with
// the deadline records of the legacy scheme are still compared: long
// enough for every workload to be reconciled after an upgrade, and for
// most rollouts deferred across it to roll.
const DefaultLegacyGrace = 24 * time.Hour

// LoadLegacyRecordsUntil returns the migration deadline of the legacy
// digest scheme: LegacyRecordsUntilAnnotation of the digest key Secret name.
// A Secret without it (made by a Reroll before the deadline, which may
// have written legacy records) gets now + DefaultLegacyGrace, by an update
// guarded by the Secret's resourceVersion, so that two replicas starting
// at once agree on the first write; a Secret LoadDigestKey creates gets its
// creation time (no legacy record can exist). An unreadable value counts
// as passed. c must read from the API server.
func LoadLegacyRecordsUntil(ctx context.Context, c client.Client, name types.NamespacedName, now time.Time) (time.Time, error) {
	until, err := loadDeadline(ctx, c, name, LegacyRecordsUntilAnnotation, now.Add(DefaultLegacyGrace))
	if err != nil {
		return time.Time{}, fmt.Errorf("reading or writing the legacy digest scheme's deadline (annotation %s) of the digest key Secret %s: %w", LegacyRecordsUntilAnnotation, name, err)
	}
	return until, nil
}

// V1DerivationsUntilAnnotation is the annotation on the digest key Secret
// that holds the deadline of the v1 key derivation (RFC 3339, UTC), written
// once (LoadV1DerivationsUntil): until then state that a Reroll before the
// v2 derivation signed (workload annotations, Job journal and pod record
// entries, baselines) still verifies, and is signed again when Reroll
// reads it (digest.Key.WithV1DerivationsUntil); from then on it counts as
// forged.
const V1DerivationsUntilAnnotation = "reroll.dev/v1-derivations-until"

// DefaultV1DerivationsGrace is how long after the first start of a Reroll
// with the v2 key derivation state signed under v1 still verifies: every
// workload is reconciled (and its state signed again) at the leader's
// start, and Reroll's records are signed again when first read; a week
// leaves room for records read rarely (a halted change set's workloads, a
// Job re-created days later) and for a rollback and a second upgrade.
const DefaultV1DerivationsGrace = 7 * 24 * time.Hour

// LoadV1DerivationsUntil returns the deadline of the v1 key derivation:
// V1DerivationsUntilAnnotation of the digest key Secret name, written now
// + DefaultV1DerivationsGrace when absent (a Secret of a Reroll before the
// v2 derivation), as LoadLegacyRecordsUntil does; a Secret LoadDigestKey
// creates gets its creation time. An unreadable value counts as passed. c
// must read from the API server.
func LoadV1DerivationsUntil(ctx context.Context, c client.Client, name types.NamespacedName, now time.Time) (time.Time, error) {
	until, err := loadDeadline(ctx, c, name, V1DerivationsUntilAnnotation, now.Add(DefaultV1DerivationsGrace))
	if err != nil {
		return time.Time{}, fmt.Errorf("reading or writing the v1 key derivation's deadline (annotation %s) of the digest key Secret %s: %w", V1DerivationsUntilAnnotation, name, err)
	}
	return until, nil
}

// loadDeadline returns the time in annotation of the Secret name, writing
// first when absent, by an update guarded by the Secret's
// resourceVersion so that replicas starting at once agree on the first
// write. An unreadable value is the zero time (passed).
func loadDeadline(ctx context.Context, c client.Client, name types.NamespacedName, annotation string, first time.Time) (time.Time, error) {
	var until time.Time
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var s corev1.Secret
		if err := c.Get(ctx, name, &s); err != nil {
			return err
		}
		if v, ok := s.Annotations[annotation]; ok {
			until, _ = time.Parse(time.RFC3339, v)
			return nil
		}
		until = first.UTC().Truncate(time.Second)
		if s.Annotations == nil {
			s.Annotations = map[string]string{}
		}
		s.Annotations[annotation] = until.Format(time.RFC3339)
		return c.Update(ctx, &s, client.FieldOwner(workload.FieldManager))
	})
	return until, err
}
