package digest

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
)

// MinKeyBytes is the shortest installation key accepted: 256 bits.
const MinKeyBytes = 32

// Key is the installation key under which Reroll digests ConfigMap and
// Secret values: each digest is the HMAC-SHA-256 of the value under the key.
// Someone who can read a digest (a record on a workload, a config hash, a
// notification) but not the key cannot test guesses of the value offline,
// nor tell whether two installations hold the same value. Every replica of
// one installation reads the same key (cmd/reroll keeps it in a Secret), so
// their digests agree. The zero Key digests with plain SHA-256; only tests
// and benchmarks use it.
type Key struct {
	secret []byte
	// id names the key in records; "" for the zero Key.
	id string
}

// NewKey returns the Key of secret, which must be at least MinKeyBytes
// long. The caller must not change secret afterwards.
func NewKey(secret []byte) (Key, error) {
	if len(secret) < MinKeyBytes {
		return Key{}, fmt.Errorf("the digest key has %d bytes, fewer than the %d required", len(secret), MinKeyBytes)
	}
	m := hmac.New(sha256.New, secret)
	m.Write([]byte("reroll.dev key id"))
	return Key{secret: secret, id: hex.EncodeToString(m.Sum(nil))[:8]}, nil
}

// Derive returns a 32-byte key for another use of the installation key
// (purpose names it, e.g. "projection"): the HMAC-SHA-256 of purpose under
// k, so that digests made for one use can never be compared with another's.
// The zero Key derives a key from purpose alone; only tests use it.
func (k Key) Derive(purpose string) []byte {
	m := hmac.New(sha256.New, k.secret)
	m.Write([]byte("reroll.dev derived key: " + purpose))
	return m.Sum(nil)
}

// ID is a short name of the key (8 hex characters, derived from the key by
// HMAC, so it reveals nothing of it), recorded beside every record so that
// a record made under another key is recognized; "" for the zero Key.
func (k Key) ID() string { return k.id }

// Value returns the lowercase hex digest of one value (64 characters):
// HMAC-SHA-256 under k, or plain SHA-256 for the zero Key.
func (k Key) Value(v []byte) string {
	h := k.hash()
	h.Write(v)
	return hex.EncodeToString(h.Sum(nil))
}

func (k Key) hash() hash.Hash {
	if k.secret == nil {
		return sha256.New()
	}
	return hmac.New(sha256.New, k.secret)
}

// stateMACBytes is the length of a state signature: 128 bits, which no
// one without the key can guess.
const stateMACBytes = 16

// StateMAC returns the signature of one annotation Reroll writes as its own
// state on an object (a pending rollout, a rollout's start): the first 16
// bytes, as lowercase hex (32 characters), of the HMAC-SHA-256 under
// Derive("state") of the object's UID, the annotation's name and its value,
// each followed by a NUL byte. A tenant who can write the annotation but
// not read the key cannot make a signature that verifies, nor move one to
// another object or annotation.
func (k Key) StateMAC(uid, name, value string) string {
	m := hmac.New(sha256.New, k.Derive("state"))
	for _, s := range []string{uid, name, value} {
		m.Write([]byte(s))
		m.Write([]byte{0})
	}
	return hex.EncodeToString(m.Sum(nil)[:stateMACBytes])
}
