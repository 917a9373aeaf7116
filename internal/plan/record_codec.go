package plan

import (
	"encoding/json"
	"slices"
	"strings"
)

// The record is encoded and decoded at every reconcile (bounded sizes it,
// record writes it and keys the decision with it, the annotations trigger
// hashes it, previous reads the workload's), and encoding/json, which
// walks the maps by reflection, was a third of plan.Decide's time
// (BenchmarkDecide_Fanout). appendRecord and parseRecord do the same for
// the records Reroll writes, whose names, keys and digests need no JSON
// escaping, and hand anything else to encoding/json, so that every value
// encodes and decodes exactly as encoding/json does.

// appendRecord appends the JSON encoding of o to b, byte for byte as
// json.Marshal encodes it: null for a nil map, map keys sorted, strings
// escaped as encoding/json escapes them (plainJSON strings as they are).
func appendRecord(b []byte, o Record) []byte {
	if o == nil {
		return append(b, "null"...)
	}
	b = append(b, '{')
	for i, id := range sortedKeys(o) {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, id)
		b = append(b, ':')
		keys := o[id]
		if keys == nil {
			b = append(b, "null"...)
			continue
		}
		b = append(b, '{')
		for j, k := range sortedKeys(keys) {
			if j > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, k)
			b = append(b, ':')
			b = appendJSONString(b, keys[k])
		}
		b = append(b, '}')
	}
	return append(b, '}')
}

// encodedSize is the length of o's encoding when its strings need no
// escaping: the capacity appendRecord's buffer starts with.
func (o Record) encodedSize() int {
	n := 2
	for id, keys := range o {
		n += len(id) + 8 // quotes, colon, comma, braces or null
		for k, v := range keys {
			n += len(k) + len(v) + 6 // quotes, colon, comma
		}
	}
	return n
}

// sortedKeys returns m's keys in byte order, the order encoding/json
// writes them in.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// appendJSONString appends s as encoding/json encodes a string: as it is,
// quoted, when plainJSON; else through json.Marshal.
func appendJSONString(b []byte, s string) []byte {
	if plainJSON(s) {
		b = append(b, '"')
		b = append(b, s...)
		return append(b, '"')
	}
	q, _ := json.Marshal(s) // a string always encodes
	return append(b, q...)
}

// plainJSON reports whether s is encoded by encoding/json as itself in
// quotes: printable ASCII without the quote, the backslash, and the three
// characters it escapes for HTML (<, >, &).
func plainJSON(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
}

// parseRecord decodes a record as json.Unmarshal decodes it into a Record,
// for values in the form appendRecord writes (no white space, plainJSON
// strings); any other value, valid or not, goes to json.Unmarshal, whose
// result and error it then returns.
func parseRecord(v string) (Record, error) {
	if o, ok := parsePlainRecord(v); ok {
		return o, nil
	}
	var o Record
	if err := json.Unmarshal([]byte(v), &o); err != nil {
		return nil, err
	}
	return o, nil
}

// parsePlainRecord decodes v when it is in appendRecord's form; ok is
// false for anything else. A name seen twice keeps its last value, as in
// json.Unmarshal, which also merges the key maps of an object named twice:
// such a value is left to it.
func parsePlainRecord(v string) (o Record, ok bool) {
	p := plainParser{s: v}
	if v == "null" {
		return nil, true
	}
	if !p.skip('{') {
		return nil, false
	}
	o = Record{}
	if p.skip('}') {
		return o, p.done()
	}
	for {
		id, ok := p.str()
		if !ok || !p.skip(':') {
			return nil, false
		}
		if _, dup := o[id]; dup {
			return nil, false
		}
		if strings.HasPrefix(p.s[p.i:], "null") {
			p.i += len("null")
			o[id] = nil
		} else {
			keys, ok := p.keys()
			if !ok {
				return nil, false
			}
			o[id] = keys
		}
		if p.skip('}') {
			return o, p.done()
		}
		if !p.skip(',') {
			return nil, false
		}
	}
}

// plainParser reads s from i.
type plainParser struct {
	s string
	i int
}

func (p *plainParser) skip(c byte) bool {
	if p.i < len(p.s) && p.s[p.i] == c {
		p.i++
		return true
	}
	return false
}

func (p *plainParser) done() bool { return p.i == len(p.s) }

// str reads a quoted plainJSON string.
func (p *plainParser) str() (string, bool) {
	if !p.skip('"') {
		return "", false
	}
	end := strings.IndexByte(p.s[p.i:], '"')
	if end < 0 {
		return "", false
	}
	s := p.s[p.i : p.i+end]
	if !plainJSON(s) {
		return "", false
	}
	p.i += end + 1
	return s, true
}

// keys reads an object of plainJSON strings, each name once.
func (p *plainParser) keys() (map[string]string, bool) {
	if !p.skip('{') {
		return nil, false
	}
	m := map[string]string{}
	if p.skip('}') {
		return m, true
	}
	for {
		k, ok := p.str()
		if !ok || !p.skip(':') {
			return nil, false
		}
		v, ok := p.str()
		if !ok {
			return nil, false
		}
		m[k] = v
		if p.skip('}') {
			return m, true
		}
		if !p.skip(',') {
			return nil, false
		}
	}
}
