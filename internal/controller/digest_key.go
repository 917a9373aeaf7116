package controller

import (
	"context"
	"crypto/rand"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reroll/reroll/internal/digest"
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
				// Created now: Reroll is installed now (LoadInstalledAt).
				Annotations: map[string]string{InstalledAtAnnotation: time.Now().UTC().Format(time.RFC3339)}},
			Type: corev1.SecretTypeOpaque,
			Data: map[string][]byte{DigestKeyData: secret},
		}
		err = c.Create(ctx, &s, client.FieldOwner(FieldManager))
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
