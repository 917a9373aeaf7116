package halts

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/reroll/reroll/internal/delivery"
	"github.com/reroll/reroll/internal/digest"
)

// SignatureKey is the data key of a record's signature: Reroll signs each
// record it writes under the installation key (sign), so a halt that
// anyone else wrote, or that was copied from another set's ConfigMap,
// holds nothing.
const SignatureKey = "signature"

// ResumeKey is the data key that `kubectl reroll resume` writes beside a
// record (Resume): which halt it resumes and when. The plugin cannot read
// the installation key, so the resume is not signed; it can only release
// the one halt it names, never halt anything, and writing it takes what
// deleting the record takes: update on ConfigMaps in Reroll's namespace.
const ResumeKey = "resume"

// signatureBytes is the length of a record's signature: 128 bits.
const signatureBytes = 16

// sign returns the signature of value, the record in ConfigMap
// namespace/name: the first 16 bytes, as lowercase hex, of the
// HMAC-SHA-256 under the installation key's Derive("halt-record") of the
// namespace, the name and the value, each followed by a NUL byte. Bound to
// the ConfigMap's name, which holds the set's ID, a signed record cannot
// be moved to another set, nor to another installation.
func sign(k digest.Key, namespace, name, value string) string {
	m := hmac.New(sha256.New, k.Derive("halt-record"))
	for _, s := range []string{namespace, name, value} {
		m.Write([]byte(s))
		m.Write([]byte{0})
	}
	return hex.EncodeToString(m.Sum(nil)[:signatureBytes])
}

// ErrNotSigned is returned by Verify for a record that Reroll did not sign
// (under k, or the key k replaced in a rotation).
var ErrNotSigned = errors.New("the halt record does not carry Reroll's signature")

// ConfigMap returns the ConfigMap of halt record h of set id, under prefix
// in namespace, as Reroll writes it: labelled LabelKey=prefix, the record's
// JSON under DataKey (bounded, delivery.Halt.Bounded) and its signature
// under SignatureKey.
func ConfigMap(k digest.Key, namespace, prefix, id string, h delivery.Halt) *corev1.ConfigMap {
	name := Name(prefix, id)
	v := h.Bounded().String()
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: map[string]string{LabelKey: prefix}},
		Data:       map[string]string{DataKey: v, SignatureKey: sign(k, namespace, name, v)},
	}
}

// Verify returns the halt record in cm, one of the ConfigMaps of halt
// records, when Reroll signed it under k (or, during a rotation, under the
// key k replaced: digest.Key.Older), with the resume an operator wrote
// beside it applied (Read). A record that does not verify is ErrNotSigned;
// one that does not parse, the parse error.
func Verify(k digest.Key, cm *corev1.ConfigMap) (*delivery.Halt, error) {
	v, mac := cm.Data[DataKey], cm.Data[SignatureKey]
	ok := false
	for _, key := range append([]digest.Key{k}, k.Older()...) {
		if hmac.Equal([]byte(mac), []byte(sign(key, cm.Namespace, cm.Name, v))) {
			ok = true
			break
		}
	}
	if !ok {
		return nil, ErrNotSigned
	}
	return Read(cm)
}

// Read returns the halt record in cm with the resume written beside it
// applied (an operator's resume of the very halt recorded; any other is
// ignored), without checking its signature: for what a user is shown (the
// kubectl plugin cannot read the installation key), never for a decision
// of Reroll's (Verify).
func Read(cm *corev1.ConfigMap) (*delivery.Halt, error) {
	h, err := delivery.ParseHalt(cm.Data[DataKey])
	if err != nil {
		return nil, err
	}
	return resumed(h, cm.Data[ResumeKey]), nil
}

// resumeRequest is the value of ResumeKey: the halt resumed (its Halted
// time) and when.
type resumeRequest struct {
	Halted time.Time `json:"halted"`
	At     time.Time `json:"at"`
}

// maxResumeBytes bounds the value of ResumeKey read.
const maxResumeBytes = 256

// resumed returns h with req, the value of ResumeKey, applied: resumed at
// req's time (at the earliest when it halted: the operator's clock may lag
// Reroll's) when req names h's halt; h itself when req is empty, damaged,
// or names another (an earlier) halt of the set.
func resumed(h *delivery.Halt, req string) *delivery.Halt {
	if req == "" || len(req) > maxResumeBytes || !h.Active() {
		return h
	}
	var r resumeRequest
	if err := json.Unmarshal([]byte(req), &r); err != nil || !r.Halted.Equal(h.Halted) {
		return h
	}
	out := h.Resume(maxTime(r.At, h.Halted))
	return &out
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// Resume writes into cm, the ConfigMap of a halt record, the resume of its
// halt at now, as `kubectl reroll resume` does; the caller updates cm. It
// fails when cm holds no active halt.
func Resume(cm *corev1.ConfigMap, now time.Time) error {
	h, err := Read(cm)
	if err != nil {
		return fmt.Errorf("reading the halt record %s/%s: %w", cm.Namespace, cm.Name, err)
	}
	if !h.Active() {
		return fmt.Errorf("the halt record %s/%s is not halted", cm.Namespace, cm.Name)
	}
	b, _ := json.Marshal(resumeRequest{Halted: h.Halted, At: now.UTC().Truncate(time.Second)}) // times always encode
	if cm.Data == nil {
		cm.Data = map[string]string{}
	}
	cm.Data[ResumeKey] = string(b)
	return nil
}
