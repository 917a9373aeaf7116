package baseline

import (
	"crypto/sha256"
	"encoding/hex"
	"sort"
	"strings"

	"github.com/reroll/reroll/internal/digest"
)

// MaxBytes bounds the data of one namespace's ConfigMap: the keys and
// values of its entries, in bytes. It leaves room, under the API server's
// 1 MiB limit of a ConfigMap, for the metadata Reroll and the API add.
const MaxBytes = 900 << 10

// Entry is the baseline of one workload.
type Entry struct {
	// Kind is the workload kind's name ("Deployment"), Name the workload's
	// name in the namespace of the ConfigMap, UID its metadata.uid: a
	// workload deleted and created again under the same name is another
	// workload, and does not read this entry.
	Kind, Name, UID string
	// Record is the record (plan.RecordAnnotation's value, JSON); "" in a
	// put removes the entry.
	Record string
}

// DataKey is the ConfigMap data key of a workload's entry: "<Kind>.<name>".
// Kind names are letters and a workload's name is a DNS subdomain, so it
// is a valid data key, and no two workloads of a namespace share one.
func DataKey(kind, name string) string { return kind + "." + name }

// Sealer signs entries: digest.Key.
type Sealer interface {
	// StateMAC signs value as the state name of the object uid.
	StateMAC(uid, name, value string) string
	// VerifyStateMAC reports whether mac is such a signature (ok), and
	// whether StateMAC made it (current; false for one made under an
	// older key derivation, accepted until its deadline).
	VerifyStateMAC(uid, name, value, mac string) (ok, current bool)
}

var _ Sealer = digest.Key{}

// name is what an entry's signature binds besides its UID and record: the
// store (its ConfigMaps' name prefix), the namespace and the workload, so
// that an entry copied to another store, namespace or workload does not
// verify.
func name(store, namespace string, e Entry) string {
	return store + "/" + namespace + "/" + DataKey(e.Kind, e.Name)
}

// Seal returns the data value of entry e, of namespace in store:
// "<uid> <signature> <record>".
func Seal(k Sealer, store, namespace string, e Entry) string {
	return e.UID + " " + k.StateMAC(e.UID, name(store, namespace, e), e.Record) + " " + e.Record
}

// ConfigMapName is the name of the ConfigMap, in Reroll's namespace, that
// holds the baselines of the workloads of namespace: "<store>-<20 hex
// characters of the SHA-256 of namespace>" (store is the --baselines
// prefix). A hash, so that any namespace name gives a valid, bounded name.
func ConfigMapName(store, namespace string) string {
	sum := sha256.Sum256([]byte(namespace))
	return store + "-" + hex.EncodeToString(sum[:10])
}

// Open returns the entry of data key dataKey and value, in namespace of
// store, and whether it is well formed and its signature verifies under k.
// An entry that does not verify was not written by Reroll under this key
// (a tenant with access to Reroll's namespace, or an older key): it counts
// as absent.
func Open(k Sealer, store, namespace, dataKey, value string) (Entry, bool) {
	e, mac, ok := parse(dataKey, value)
	if !ok {
		return Entry{}, false
	}
	if ok, _ := k.VerifyStateMAC(e.UID, name(store, namespace, e), e.Record, mac); !ok {
		return Entry{}, false
	}
	return e, true
}

// Peek returns the entry of data key dataKey and value, and whether it is
// well formed, without verifying its signature: for a reader that does not
// hold the installation key (the kubectl plugin), which must treat what it
// returns as a claim, not as Reroll's state.
func Peek(dataKey, value string) (Entry, bool) {
	e, _, ok := parse(dataKey, value)
	return e, ok
}

// parse splits an entry into its fields and its signature.
func parse(dataKey, value string) (e Entry, mac string, ok bool) {
	kind, wname, ok := strings.Cut(dataKey, ".")
	if !ok || kind == "" || wname == "" {
		return Entry{}, "", false
	}
	uid, rest, ok := strings.Cut(value, " ")
	if !ok || uid == "" {
		return Entry{}, "", false
	}
	mac, record, ok := strings.Cut(rest, " ")
	if !ok || record == "" {
		return Entry{}, "", false
	}
	return Entry{Kind: kind, Name: wname, UID: uid, Record: record}, mac, true
}

// OpenAll returns the entries of a namespace's ConfigMap data that verify,
// by data key, and how many did not (to drop at the next write).
func OpenAll(k Sealer, store, namespace string, data map[string]string) (map[string]Entry, int) {
	out := make(map[string]Entry, len(data))
	bad := 0
	for key, v := range data {
		e, ok := Open(k, store, namespace, key, v)
		if !ok {
			bad++
			continue
		}
		out[key] = e
	}
	return out, bad
}

// Merge returns the data of a namespace's ConfigMap after puts: the entries
// of data that verify, each put sealed in place of its workload's entry (an
// empty Record removes it), and no entry that does not verify. Puts that
// would take the data past limit bytes (MaxBytes when limit <= 0) are left
// out, in the order given, and returned as refused: the caller keeps those
// baselines elsewhere (on the workload itself).
func Merge(k Sealer, store, namespace string, data map[string]string, puts []Entry, limit int) (out map[string]string, refused []Entry) {
	if limit <= 0 {
		limit = MaxBytes
	}
	kept, _ := OpenAll(k, store, namespace, data)
	out = make(map[string]string, len(kept)+len(puts))
	size := 0
	keys := make([]string, 0, len(kept))
	for key := range kept {
		keys = append(keys, key)
	}
	sort.Strings(keys)
	for _, key := range keys {
		v := data[key]
		out[key] = v
		size += len(key) + len(v)
	}
	for _, e := range puts {
		key := DataKey(e.Kind, e.Name)
		if old, ok := out[key]; ok {
			size -= len(key) + len(old)
			delete(out, key)
		}
		if e.Record == "" {
			continue
		}
		v := Seal(k, store, namespace, e)
		if size+len(key)+len(v) > limit {
			refused = append(refused, e)
			continue
		}
		out[key] = v
		size += len(key) + len(v)
	}
	return out, refused
}
