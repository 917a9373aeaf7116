package compact

import (
	"google.golang.org/protobuf/encoding/protowire"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The field numbers of the encoding a Workload holds (k8s.io/api/apps/v1's
// generated.proto): the spec in each kind, the pod template in each
// kind's spec.
const (
	specField                = 2
	deploymentTemplateField  = 3
	statefulSetTemplateField = 3
	daemonSetTemplateField   = 2
)

// KindOf returns the kind obj decodes to (Expand) when obj is a *Workload:
// "Deployment", "StatefulSet" or "DaemonSet"; "" for any other obj. It
// decodes nothing.
func KindOf(obj client.Object) string {
	w, ok := obj.(*Workload)
	if !ok {
		return ""
	}
	switch w.kind {
	case deployment:
		return "Deployment"
	case statefulSet:
		return "StatefulSet"
	case daemonSet:
		return "DaemonSet"
	}
	return ""
}

// PodTemplate returns spec.template of the object obj decodes to when obj
// is a *Workload, decoding that template only (not the metadata, the rest
// of the spec nor the status: on BenchmarkPodTemplate's Deployment about
// a third less time and garbage than Expand): a
// new template, which the caller may change. ok is false for any other
// obj. Field index functions and predicates that read a template only use
// it through the kinds' PodTemplate (internal/workload).
func PodTemplate(obj client.Object) (_ *corev1.PodTemplateSpec, ok bool) {
	w, ok := obj.(*Workload)
	if !ok {
		return nil, false
	}
	field := protowire.Number(deploymentTemplateField)
	switch w.kind {
	case statefulSet:
		field = statefulSetTemplateField
	case daemonSet:
		field = daemonSetTemplateField
	}
	t := &corev1.PodTemplateSpec{}
	spec, found, err := message(w.rest, specField)
	if err == nil && found {
		var b []byte
		if b, found, err = message(spec, field); err == nil && found {
			err = t.Unmarshal(b)
		}
	}
	if err != nil {
		// Never for w's own encoding (From); as decode does, no half-read
		// template.
		*t = corev1.PodTemplateSpec{}
	}
	return t, true
}

// message returns the bytes of length-delimited field num in b, an encoded
// protobuf message written by a generated Marshal (which writes each field
// once; should it appear twice, the last is returned). found is false when
// b has none; err is set when b is not a well-formed encoding.
func message(b []byte, num protowire.Number) (_ []byte, found bool, err error) {
	var out []byte
	for len(b) > 0 {
		n, typ, l := protowire.ConsumeTag(b)
		if l < 0 {
			return nil, false, protowire.ParseError(l)
		}
		b = b[l:]
		if n == num && typ == protowire.BytesType {
			v, l := protowire.ConsumeBytes(b)
			if l < 0 {
				return nil, false, protowire.ParseError(l)
			}
			out, found = v, true
			b = b[l:]
			continue
		}
		l = protowire.ConsumeFieldValue(n, typ, b)
		if l < 0 {
			return nil, false, protowire.ParseError(l)
		}
		b = b[l:]
	}
	return out, found, nil
}
