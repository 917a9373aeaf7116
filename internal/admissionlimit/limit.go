package admissionlimit

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stypes "k8s.io/apimachinery/pkg/types"
)

// DefaultMaxBytes is the default bound on an AdmissionReview's body, in
// bytes: 1 MiB, which holds an object and its oldObject of about 512 KiB
// each, over ten times a large Deployment.
const DefaultMaxBytes = 1 << 20

// uidScanBytes bounds how much of an over-large body is read to find the
// request's UID: the API server writes it first, within a few hundred bytes.
const uidScanBytes = 64 << 10

// Policy says how a webhook answers a request over the bound.
type Policy int

const (
	// Allow admits the request unchanged, with a warning: for a mutating
	// webhook whose failure costs at most a rollout.
	Allow Policy = iota
	// Deny refuses the request: for a validating webhook, which must fail
	// closed.
	Deny
)

// Limit returns next behind a bound of maxBytes (DefaultMaxBytes when 0 or
// less) on the request body. A body within it reaches next; the body of one
// over it is never held whole: its UID is read from the first uidScanBytes,
// the rest discarded, and the request answered by policy (what names the
// webhook in the answer's message). A body over the bound whose UID cannot
// be found is answered with HTTP 413, which the API server treats as a
// failure of the webhook (its failurePolicy applies).
func Limit(next http.Handler, maxBytes int64, policy Policy, what string) http.Handler {
	if maxBytes <= 0 {
		maxBytes = DefaultMaxBytes
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body == nil || r.Body == http.NoBody {
			next.ServeHTTP(w, r)
			return
		}
		var head []byte
		if r.ContentLength < 0 || r.ContentLength > maxBytes {
			// Unknown length: read up to the bound to learn it.
			if r.ContentLength < 0 {
				b, err := io.ReadAll(io.LimitReader(r.Body, maxBytes+1))
				if err != nil {
					http.Error(w, "reading the request: "+err.Error(), http.StatusBadRequest)
					return
				}
				if int64(len(b)) <= maxBytes {
					r.Body = io.NopCloser(bytes.NewReader(b))
					next.ServeHTTP(w, r)
					return
				}
				head = b[:min(len(b), uidScanBytes)]
			}
			answerTooLarge(w, r, head, maxBytes, policy, what)
			return
		}
		// The length is known and within the bound; MaxBytesReader holds
		// the body to it.
		r.Body = http.MaxBytesReader(w, r.Body, maxBytes)
		next.ServeHTTP(w, r)
	})
}

// answerTooLarge answers a request whose body is over maxBytes. head, when
// set, is the start of the body already read.
func answerTooLarge(w http.ResponseWriter, r *http.Request, head []byte, maxBytes int64, policy Policy, what string) {
	if head == nil {
		head, _ = io.ReadAll(io.LimitReader(r.Body, uidScanBytes))
	}
	// Read the rest, up to the API server's own limit, so the connection is
	// reused; nothing of it is kept.
	_, _ = io.Copy(io.Discard, io.LimitReader(r.Body, 8<<20))
	size := fmt.Sprintf("%d bytes", r.ContentLength)
	if r.ContentLength < 0 {
		size = fmt.Sprintf("over %d bytes", maxBytes)
	}
	uid, apiVersion, err := reviewUID(head)
	if err != nil {
		http.Error(w, fmt.Sprintf("%s: the AdmissionReview is %s, over the limit of %d bytes, and its uid was not found in its first %d bytes",
			what, size, maxBytes, uidScanBytes), http.StatusRequestEntityTooLarge)
		return
	}
	resp := admissionv1.AdmissionResponse{UID: uid}
	msg := fmt.Sprintf("%s: the AdmissionReview is %s, over the limit of %d bytes", what, size, maxBytes)
	switch policy {
	case Allow:
		resp.Allowed = true
		resp.Warnings = []string{"reroll: " + msg + "; admitted unchanged"}
	default:
		resp.Result = &metav1.Status{Status: metav1.StatusFailure, Code: http.StatusRequestEntityTooLarge,
			Reason: metav1.StatusReasonRequestEntityTooLarge, Message: msg}
	}
	review := admissionv1.AdmissionReview{Response: &resp}
	review.APIVersion, review.Kind = apiVersion, "AdmissionReview"
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(review)
}

// errNoUID: the start of the body holds no request.uid.
var errNoUID = errors.New("no request.uid")

// reviewUID finds request.uid and the apiVersion in the start of an
// AdmissionReview's JSON without decoding the rest: a walk over the tokens
// of the top-level object and of its "request" object, which stops at the
// UID. Values it skips are read token by token; head is at most
// uidScanBytes, which bounds what the walk allocates.
func reviewUID(head []byte) (uid k8stypes.UID, apiVersion string, err error) {
	apiVersion = admissionv1.SchemeGroupVersion.String()
	d := json.NewDecoder(bytes.NewReader(head))
	if t, err := d.Token(); err != nil || t != json.Delim('{') {
		return "", "", errNoUID
	}
	for d.More() {
		k, err := d.Token()
		if err != nil {
			return "", "", errNoUID
		}
		switch k {
		case "apiVersion":
			var v string
			if err := d.Decode(&v); err != nil {
				return "", "", errNoUID
			}
			apiVersion = v
		case "request":
			if t, err := d.Token(); err != nil || t != json.Delim('{') {
				return "", "", errNoUID
			}
			for d.More() {
				k, err := d.Token()
				if err != nil {
					return "", "", errNoUID
				}
				if k == "uid" {
					var v string
					if err := d.Decode(&v); err != nil || v == "" {
						return "", "", errNoUID
					}
					return k8stypes.UID(v), apiVersion, nil
				}
				if err := skip(d); err != nil {
					return "", "", errNoUID
				}
			}
			return "", "", errNoUID
		default:
			if err := skip(d); err != nil {
				return "", "", errNoUID
			}
		}
	}
	return "", "", errNoUID
}

// skip reads one value, however nested, token by token.
func skip(d *json.Decoder) error {
	depth := 0
	for {
		t, err := d.Token()
		if err != nil {
			return err
		}
		switch t {
		case json.Delim('{'), json.Delim('['):
			depth++
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
		if depth == 0 {
			return nil
		}
	}
}
