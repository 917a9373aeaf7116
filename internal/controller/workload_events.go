package controller

import (
	"fmt"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record"
)

// MaxEventNote is the longest Event message Reroll writes, in bytes: a note
// names objects and keys, and a workload consuming thousands of keys, or a
// long error, must not make Events that fill etcd. A longer note is cut at a
// character boundary and ends in truncatedSuffix. events.k8s.io allows 1 KiB
// for a note; Reroll keeps core/v1 Events to the same size.
const MaxEventNote = 1024

// truncatedSuffix ends a note cut to MaxEventNote.
const truncatedSuffix = " ... (truncated)"

// boundedRecorder is an EventRecorder whose notes are at most MaxEventNote
// bytes long.
type boundedRecorder struct {
	record.EventRecorder
}

func (b boundedRecorder) Event(obj runtime.Object, eventtype, reason, message string) {
	b.EventRecorder.Event(obj, eventtype, reason, truncateNote(message))
}

func (b boundedRecorder) Eventf(obj runtime.Object, eventtype, reason, messageFmt string, args ...any) {
	b.EventRecorder.Event(obj, eventtype, reason, truncateNote(fmt.Sprintf(messageFmt, args...)))
}

func (b boundedRecorder) AnnotatedEventf(obj runtime.Object, annotations map[string]string, eventtype, reason, messageFmt string, args ...any) {
	b.EventRecorder.AnnotatedEventf(obj, annotations, eventtype, reason, "%s", truncateNote(fmt.Sprintf(messageFmt, args...)))
}

// truncateNote cuts s to MaxEventNote bytes, never inside a UTF-8 sequence.
func truncateNote(s string) string {
	if len(s) <= MaxEventNote {
		return s
	}
	cut := MaxEventNote - len(truncatedSuffix)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + truncatedSuffix
}
