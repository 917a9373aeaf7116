package revert

// restOf appends to dst the JSON encoding of the rest of a template (what
// envtrim.Keep drops, as SumsOf's shallow copies hold it) read from full,
// the compact JSON encoding of the whole template that encoding/json
// wrote: full without the members metadata.annotations, spec.volumes,
// spec.imagePullSecrets and each init, regular and ephemeral container's
// env, envFrom and volumeMounts (all omitempty, so encoding/json leaves
// out exactly these members when they are nil), and with an empty
// spec.containers (no omitempty) as null, the nil list of withoutKept.
// Members keep encoding/json's order, so the bytes are those that
// json.Marshal writes of the rest. ok is false when full is not in that
// shape (it always is: encoding/json writes compact, valid JSON); the
// caller then encodes the rest itself.
func restOf(dst, full []byte) (out []byte, ok bool) {
	s := restScan{b: full, out: dst}
	end := s.object(0, rootMember)
	if end != len(full) {
		return dst, false
	}
	return s.out, true
}

// member is how restScan treats the value of an object's member.
type member int

const (
	// copied whole.
	copied member = iota
	// dropped with its key.
	dropped
	// the template's metadata: an object of metaMember.
	metadata
	// the pod spec: an object of specMember.
	podSpec
	// a list of (init or ephemeral) containers: objects of
	// containerMember.
	containerList
	// spec.containers: a containerList whose empty form is null.
	containers
)

// rootMember, metaMember, specMember and containerMember say, by the
// quoted key, how the members of a template, its metadata, its pod spec
// and a container go into the rest.
func rootMember(key []byte) member {
	switch string(key) {
	case `"metadata"`:
		return metadata
	case `"spec"`:
		return podSpec
	}
	return copied
}

func metaMember(key []byte) member {
	if string(key) == `"annotations"` {
		return dropped
	}
	return copied
}

func specMember(key []byte) member {
	switch string(key) {
	case `"volumes"`, `"imagePullSecrets"`:
		return dropped
	case `"initContainers"`, `"ephemeralContainers"`:
		return containerList
	case `"containers"`:
		return containers
	}
	return copied
}

func containerMember(key []byte) member {
	switch string(key) {
	case `"env"`, `"envFrom"`, `"volumeMounts"`:
		return dropped
	}
	return copied
}

// restScan reads compact JSON from b and appends the rest to out. Each
// method takes the index of a value's first byte and returns the index
// just past it, or -1 when b does not hold what it expects there.
type restScan struct {
	b   []byte
	out []byte
}

// object copies the object at i, each member as kind says.
func (s *restScan) object(i int, kind func([]byte) member) int {
	b := s.b
	if i < 0 || i >= len(b) || b[i] != '{' {
		return -1
	}
	s.out = append(s.out, '{')
	i++
	if i < len(b) && b[i] == '}' {
		s.out = append(s.out, '}')
		return i + 1
	}
	written := false
	for {
		k := skipString(b, i)
		if k < 0 || k >= len(b) || b[k] != ':' {
			return -1
		}
		m := kind(b[i:k])
		if m != dropped {
			if written {
				s.out = append(s.out, ',')
			}
			written = true
			s.out = append(s.out, b[i:k+1]...)
		}
		v := k + 1
		var end int
		switch m {
		case copied:
			if end = skipValue(b, v); end > v {
				s.out = append(s.out, b[v:end]...)
			}
		case dropped:
			end = skipValue(b, v)
		case metadata:
			end = s.object(v, metaMember)
		case podSpec:
			end = s.object(v, specMember)
		case containerList, containers:
			end = s.containers(v, m == containers)
		}
		if end <= v || end >= len(b) {
			return -1
		}
		switch b[end] {
		case ',':
			i = end + 1
		case '}':
			s.out = append(s.out, '}')
			return end + 1
		default:
			return -1
		}
	}
}

// containers copies the list of containers at i (or null); an empty list
// as null when emptyIsNull.
func (s *restScan) containers(i int, emptyIsNull bool) int {
	b := s.b
	if i >= len(b) {
		return -1
	}
	if b[i] != '[' {
		if end := skipValue(b, i); end >= 0 && string(b[i:end]) == "null" {
			s.out = append(s.out, "null"...)
			return end
		}
		return -1
	}
	i++
	if i < len(b) && b[i] == ']' {
		if emptyIsNull {
			s.out = append(s.out, "null"...)
		} else {
			s.out = append(s.out, "[]"...)
		}
		return i + 1
	}
	s.out = append(s.out, '[')
	for {
		end := s.object(i, containerMember)
		if end < 0 || end >= len(b) {
			return -1
		}
		switch b[end] {
		case ',':
			s.out = append(s.out, ',')
			i = end + 1
		case ']':
			s.out = append(s.out, ']')
			return end + 1
		default:
			return -1
		}
	}
}

// skipString returns the index just past the string whose opening quote
// is at i, or -1.
func skipString(b []byte, i int) int {
	if i < 0 || i >= len(b) || b[i] != '"' {
		return -1
	}
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return -1
}

// skipValue returns the index just past the value at i (a string, an
// object, a list or a literal of compact JSON), or -1.
func skipValue(b []byte, i int) int {
	depth := 0
	for ; i < len(b); i++ {
		switch b[i] {
		case '"':
			end := skipString(b, i)
			if end < 0 {
				return -1
			}
			if depth == 0 {
				return end
			}
			i = end - 1
		case '{', '[':
			depth++
		case '}', ']':
			if depth == 0 {
				return i
			}
			if depth--; depth == 0 {
				return i + 1
			}
		case ',':
			if depth == 0 {
				return i
			}
		}
	}
	if depth == 0 {
		return i
	}
	return -1
}
