package metricsauth

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"net/http"
	"strings"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/reroll/reroll/internal/workload"
)

// TokenKey is the data key of the token Secret that holds the bearer token.
const TokenKey = "token"

// tokenBytes is the number of random bytes of a token Reroll creates; the
// token is their hex encoding (64 characters).
const tokenBytes = 32

// MinTokenLength is the shortest token accepted from an existing Secret, in
// bytes: a token set by hand must be as hard to guess as a created one.
const MinTokenLength = 32

// LoadToken reads the bearer token from key TokenKey of the Secret name,
// creating the Secret with a new random token (64 hex characters) when it
// does not exist. Two replicas starting at once may both try to create it:
// the one that loses gets AlreadyExists and reads the winner's token. c must
// read from the API server, not from a cache. A token shorter than
// MinTokenLength bytes is an error naming the Secret and the key.
func LoadToken(ctx context.Context, c client.Client, name types.NamespacedName) ([]byte, error) {
	var s corev1.Secret
	err := c.Get(ctx, name, &s)
	if apierrors.IsNotFound(err) {
		raw := make([]byte, tokenBytes)
		if _, err := rand.Read(raw); err != nil {
			return nil, fmt.Errorf("generating the metrics token: %w", err)
		}
		s = corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: name.Namespace, Name: name.Name, Labels: map[string]string{"app.kubernetes.io/name": "reroll"}},
			Type:       corev1.SecretTypeOpaque,
			Data:       map[string][]byte{TokenKey: []byte(hex.EncodeToString(raw))},
		}
		err = c.Create(ctx, &s, client.FieldOwner(workload.FieldManager))
		if apierrors.IsAlreadyExists(err) {
			// Another replica created it first: use its token.
			err = c.Get(ctx, name, &s)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("reading or creating the metrics token Secret %s: %w", name, err)
	}
	token := s.Data[TokenKey]
	if len(token) < MinTokenLength {
		return nil, fmt.Errorf("metrics token Secret %s, key %q: %d bytes, at least %d needed", name, TokenKey, len(token), MinTokenLength)
	}
	return token, nil
}

// Filter returns a metrics server filter that passes a request to the
// handler only when it carries "Authorization: Bearer <token>"; any other
// request gets 401 Unauthorized and no metrics. The comparison takes the
// same time whatever the token presented.
func Filter(token []byte) metricsserver.Filter {
	return func(log logr.Logger, next http.Handler) (http.Handler, error) {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			presented, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
			if !ok || subtle.ConstantTimeCompare([]byte(strings.TrimSpace(presented)), token) != 1 {
				log.V(1).Info("Refused a metrics request without the token", "remote", r.RemoteAddr)
				w.Header().Set("WWW-Authenticate", `Bearer realm="reroll-metrics"`)
				http.Error(w, "Unauthorized", http.StatusUnauthorized)
				return
			}
			next.ServeHTTP(w, r)
		}), nil
	}
}
