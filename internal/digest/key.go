package digest

import (
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"slices"
	"time"
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
//
// A keyed digest is bound to its place: the HMAC input holds the object's
// kind, namespace and name and the data key before the value (see Digest),
// so the same value in two objects, or under two keys of one, gives
// unrelated digests, and a tenant who can read the records of another
// namespace cannot test guesses of its values with a ConfigMap of their
// own. Reroll before the binding digested the value alone; Legacy returns
// that scheme, under its own ID, so that records made by it are still
// compared until they are made again.
type Key struct {
	secret []byte
	// id names the key and the scheme in records; "" for the zero Key.
	id string
	// legacy digests each value alone (the scheme of Reroll before digests
	// were bound to their place).
	legacy bool
	// previous is the key replaced by this one in a rotation, nil when
	// none (WithPrevious).
	previous []byte
	// v1Until is when state signed under the v1 derivation stops
	// verifying (WithV1DerivationsUntil); zero: it never verifies.
	v1Until time.Time
	// older is what Older returns, made once by NewKey and WithPrevious:
	// each key's ID is an HMAC, and Older is called at every reconcile.
	older []Key
	// state is Derive("state"), made once by NewKey: StateMAC signs and
	// checks state on every reconcile, and HKDF costs more than the HMAC.
	state []byte
}

// Key ID labels: the HMAC input of each scheme's ID.
const (
	legacyIDLabel = "reroll.dev key id"
	boundIDLabel  = "reroll.dev key id, digests bound to their place"
)

// boundTag starts the HMAC input of every bound digest, so that no bound
// digest can equal a legacy one.
const boundTag = "reroll.dev/digest/v2"

// NewKey returns the Key of secret, which must be at least MinKeyBytes
// long. The caller must not change secret afterwards.
func NewKey(secret []byte) (Key, error) {
	if len(secret) < MinKeyBytes {
		return Key{}, fmt.Errorf("the digest key has %d bytes, fewer than the %d required", len(secret), MinKeyBytes)
	}
	k := Key{secret: secret, id: keyID(secret, boundIDLabel)}
	k.older = k.olderKeys()
	k.state = k.Derive(statePurpose)
	return k, nil
}

func keyID(secret []byte, label string) string {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(label))
	return hex.EncodeToString(m.Sum(nil))[:8]
}

// Legacy returns k under the scheme of Reroll before digests were bound to
// their place: each value's digest is the HMAC-SHA-256 of the value alone,
// and the ID is that scheme's (another than k's). Reroll reads records
// made under it, and only to compare them (docs/security.md, "Rotating
// the digest key"). The zero Key is its own Legacy.
func (k Key) Legacy() Key {
	if k.secret == nil {
		return k
	}
	return Key{secret: k.secret, id: keyID(k.secret, legacyIDLabel), legacy: true}
}

// IsLegacy reports whether k is a Legacy scheme (digests of the value
// alone, bound to no place).
func (k Key) IsLegacy() bool { return k.legacy }

// WithPrevious returns k with previous, the key it replaces in a rotation
// (at least MinKeyBytes long): records made under previous are still
// compared under it until they are made again under k (Older).
func (k Key) WithPrevious(previous []byte) (Key, error) {
	if len(previous) < MinKeyBytes {
		return Key{}, fmt.Errorf("the previous digest key has %d bytes, fewer than the %d required", len(previous), MinKeyBytes)
	}
	k.previous = previous
	k.older = k.olderKeys()
	return k, nil
}

// Older returns the keys whose records Reroll still compares before making
// them again under k: k's legacy scheme, and, during a rotation, the
// previous key under both schemes. None for the zero Key.
func (k Key) Older() []Key {
	if k.secret == nil || k.legacy {
		return nil
	}
	if k.older != nil {
		// A copy: what a caller does with the answer never changes k's.
		return slices.Clone(k.older)
	}
	return k.olderKeys()
}

// olderKeys computes Older.
func (k Key) olderKeys() []Key {
	out := []Key{k.Legacy()}
	if k.previous != nil {
		p := Key{secret: k.previous, id: keyID(k.previous, boundIDLabel)}
		out = append(out, p, p.Legacy())
	}
	return out
}

// deriveSalt is the HKDF salt of every key Derive returns.
const deriveSalt = "reroll.dev/derive/v2"

// Derive returns a 32-byte key for another use of the installation key
// (purpose names it, e.g. "state"): HKDF-SHA-256 (RFC 5869, crypto/hkdf) of
// k with salt deriveSalt and info purpose. Domain-separated from every
// digest: HKDF's extract step is an HMAC keyed with the salt, not with k,
// so no HMAC under k (a digest of a value a tenant chose, such as the
// legacy scheme's records) can equal a derived key, and keys of two
// purposes are unrelated. The zero Key derives a key from purpose alone;
// only tests use it.
func (k Key) Derive(purpose string) []byte {
	out, err := hkdf.Key(sha256.New, k.secret, []byte(deriveSalt), purpose, sha256.Size)
	if err != nil {
		// Only a length above 255 hash sizes fails.
		panic(fmt.Sprintf("deriving a key: %v", err))
	}
	return out
}

// DeriveV1 returns the key for purpose under the derivation of Reroll
// before Derive (v1): the HMAC-SHA-256 under k of "reroll.dev derived key: "
// and purpose. It is the same function as a digest of a value under k, so
// a legacy record of a value a tenant chose equal to that text revealed
// the derived key. Kept for the uses whose outputs outlive any migration
// and cannot be told apart by age (the change-set IDs that halt records
// and workload records name, and the key of Projections' digests, which
// tenants project into objects that may roll), and to verify state signed
// before the upgrade (VerifyStateMAC); see docs/security.md.
func (k Key) DeriveV1(purpose string) []byte {
	m := hmac.New(sha256.New, k.secret)
	m.Write([]byte("reroll.dev derived key: " + purpose))
	return m.Sum(nil)
}

// WithV1DerivationsUntil returns k accepting, until t, state signatures
// made under the v1 derivation (DeriveV1("state")) by a Reroll before the
// upgrade; from t on they do not verify, as forged state. The zero t (and
// the zero Key's) accepts none.
func (k Key) WithV1DerivationsUntil(t time.Time) Key {
	k.v1Until = t
	return k
}

// ID is a short name of the key and its scheme (8 hex characters, derived
// from the key by HMAC, so it reveals nothing of it), recorded beside every
// record so that a record made under another key, or under the legacy
// scheme of this one, is recognized; "" for the zero Key.
func (k Key) ID() string { return k.id }

// Digest returns the lowercase hex digest (64 characters) of value v of
// key name of the object kind ("ConfigMap" or "Secret") namespace/name:
// the HMAC-SHA-256 under k of boundTag, kind, namespace, name and key, each
// followed by a NUL byte (none of them can hold one), then v. The legacy
// scheme and the zero Key digest v alone (Value).
func (k Key) Digest(kind, namespace, name, key string, v []byte) string {
	h := k.hash()
	k.place(h, kind, namespace, name, key)
	h.Write(v)
	return hex.EncodeToString(h.Sum(nil))
}

// place writes the place of a bound digest into h; nothing for the legacy
// scheme and the zero Key.
func (k Key) place(h hash.Hash, kind, namespace, name, key string) {
	if k.secret == nil || k.legacy {
		return
	}
	for _, s := range []string{boundTag, kind, namespace, name, key} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
}

// compatTag starts the HMAC input of every keyed compatibility value, so
// that none can equal a digest of a key (boundTag) or a Value.
const compatTag = "reroll.dev/compat/v1"

// Compat returns the keyed value Reroll writes, with --keyed-compat-hashes,
// in place of h, a hash another tool defines over the data (Reloader's
// SHA-1 of a ConfigMap or Secret, Wave's or pod-reloader's hash of all a
// workload reads): the lowercase hex HMAC-SHA-256 under k of compatTag and
// the kind, namespace and name of what h is the hash of (the object for
// Reloader's SHA-1, the workload for Wave's and pod-reloader's), each
// followed by a NUL byte, then h. Bound to its place like Digest, so that
// equal data in two objects, or in two namespaces, gives unrelated values
// and a tenant cannot test guesses of another's data with an object of
// their own. The zero Key hashes the same input with plain SHA-256.
func (k Key) Compat(kind, namespace, name, h string) string {
	m := k.hash()
	for _, s := range []string{compatTag, kind, namespace, name} {
		m.Write([]byte(s))
		m.Write([]byte{0})
	}
	m.Write([]byte(h))
	return hex.EncodeToString(m.Sum(nil))
}

// Value returns the lowercase hex digest of one value (64 characters),
// bound to no place: HMAC-SHA-256 under k, or plain SHA-256 for the zero
// Key.
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
// another object or annotation. Check one with VerifyStateMAC.
func (k Key) StateMAC(uid, name, value string) string {
	key := k.state
	if key == nil {
		// The zero Key, or one Legacy or Older made.
		key = k.Derive(statePurpose)
	}
	return stateMAC(key, uid, name, value)
}

// VerifyStateMAC reports whether mac is the signature of value as state
// name of the object uid (StateMAC), or, until the deadline of
// WithV1DerivationsUntil, the signature that a Reroll before the v2
// derivation made of it. Current reports whether it is StateMAC's own:
// false for a v1 signature, which the caller should write again.
func (k Key) VerifyStateMAC(uid, name, value, mac string) (ok, current bool) {
	if hmac.Equal([]byte(mac), []byte(k.StateMAC(uid, name, value))) {
		return true, true
	}
	if k.secret == nil || !time.Now().Before(k.v1Until) {
		return false, false
	}
	return hmac.Equal([]byte(mac), []byte(stateMAC(k.DeriveV1(statePurpose), uid, name, value))), false
}

// statePurpose is the purpose of the key of state signatures (Derive).
const statePurpose = "state"

func stateMAC(key []byte, uid, name, value string) string {
	m := hmac.New(sha256.New, key)
	for _, s := range []string{uid, name, value} {
		m.Write([]byte(s))
		m.Write([]byte{0})
	}
	return hex.EncodeToString(m.Sum(nil)[:stateMACBytes])
}

// changeSetIDBytes is the length of a change set's ID: 64 bits, as hex (16
// characters). The ID names a set among the changes of one installation;
// it is no secret and no signature.
const changeSetIDBytes = 8

// ChangeSetID returns the ID of the change set of one change of the object
// kind/name (safe delivery, internal/delivery): the first 8 bytes, as
// lowercase hex (16 characters), of the HMAC-SHA-256 under
// DeriveV1("change-set") of scope, kind and name, each followed by a NUL
// byte, then content (a digest of the object's whole content made in this
// process, or "deleted"). scope is "" for the copies that the operator lets
// share one set across namespaces, else the namespace, so that the same
// content elsewhere makes another set.
//
// Made for this use only, under its own derived key: unlike Digest it is
// not bound to the object's namespace (copies of one object in several
// namespaces share it), and it can never equal a value's digest, a
// compatibility value or a signature. Whoever reads it (a workload's
// reroll.dev/change-set annotation, a halt record) learns when two objects
// of one name hold the same content, and when an object returns to an
// earlier content; without the key they cannot test a guess of the content.
func (k Key) ChangeSetID(scope, kind, name, content string) string {
	// The v1 derivation: a set's ID is named by halt records and workload
	// records that outlive any migration (DeriveV1).
	m := hmac.New(sha256.New, k.DeriveV1("change-set"))
	for _, s := range []string{scope, kind, name} {
		m.Write([]byte(s))
		m.Write([]byte{0})
	}
	m.Write([]byte(content))
	return hex.EncodeToString(m.Sum(nil)[:changeSetIDBytes])
}
