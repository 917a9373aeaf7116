package lazysink

import (
	"github.com/go-logr/logr"
	"github.com/go-logr/zapr"
	"go.uber.org/zap"
)

// Sink is a logr.LogSink that defers WithValues to the lines written: its
// pairs come before a line's own, as the wrapped sink's WithValues would
// put them. WithName and WithCallDepth go to the wrapped sink at once.
//
// A Sink is one pointer, so that a logr.Logger holds it without another
// allocation: each WithValues adds a node that keeps a copy of its own
// pairs (in the node itself when they are at most inlinePairs values) and
// points at the node it was made from. The pairs of all the nodes are put
// together only for a line written.
type Sink struct {
	*node
}

// inlinePairs is the number of values a node keeps without a slice of its
// own: controller-runtime's WithValues per reconcile pass two or four.
const inlinePairs = 4

// node is one step of a Sink: the sink lines go to, the pairs that step
// added and the step before it.
type node struct {
	sink logr.LogSink
	// prev is the node this one was made from; nil for New's.
	prev *node
	// kvs are this node's own pairs, a copy of the caller's (in inline when
	// they fit); the earlier ones are prev's.
	kvs    []any
	inline [inlinePairs]any
}

var (
	_ logr.LogSink          = Sink{}
	_ logr.CallDepthLogSink = Sink{}
	_ zapr.Underlier        = Sink{}
)

// New returns l with its sink wrapped in a Sink.
func New(l logr.Logger) logr.Logger {
	return logr.New(Sink{&node{sink: l.GetSink()}})
}

// Init implements logr.LogSink: the wrapped sink skips one more frame,
// this Sink's.
func (s Sink) Init(info logr.RuntimeInfo) {
	info.CallDepth++
	s.sink.Init(info)
}

// Enabled implements logr.LogSink.
func (s Sink) Enabled(level int) bool { return s.sink.Enabled(level) }

// Info implements logr.LogSink.
func (s Sink) Info(level int, msg string, kvs ...any) {
	s.sink.Info(level, msg, s.with(kvs)...)
}

// Error implements logr.LogSink.
func (s Sink) Error(err error, msg string, kvs ...any) {
	s.sink.Error(err, msg, s.with(kvs)...)
}

// WithValues implements logr.LogSink: it keeps a copy of kvs for the lines
// written.
func (s Sink) WithValues(kvs ...any) logr.LogSink {
	if len(kvs) == 0 {
		return s
	}
	n := &node{sink: s.sink, prev: s.node}
	if len(kvs) <= inlinePairs {
		n.kvs = n.inline[:len(kvs)]
	} else {
		n.kvs = make([]any, len(kvs))
	}
	copy(n.kvs, kvs)
	return Sink{n}
}

// WithName implements logr.LogSink.
func (s Sink) WithName(name string) logr.LogSink {
	return Sink{&node{sink: s.sink.WithName(name), prev: s.node}}
}

// WithCallDepth implements logr.CallDepthLogSink.
func (s Sink) WithCallDepth(depth int) logr.LogSink {
	if c, ok := s.sink.(logr.CallDepthLogSink); ok {
		return Sink{&node{sink: c.WithCallDepth(depth), prev: s.node}}
	}
	return s
}

// GetUnderlying implements zapr.Underlier: the wrapped zap logger with the
// kept pairs; nil when the wrapped sink is not zap's.
func (s Sink) GetUnderlying() *zap.Logger {
	u, ok := s.sink.(zapr.Underlier)
	if !ok {
		return nil
	}
	kvs := s.with(nil)
	if len(kvs) == 0 {
		return u.GetUnderlying()
	}
	return u.GetUnderlying().Sugar().With(kvs...).Desugar()
}

// with returns the kept pairs, the earliest first, followed by kvs. The
// answer is kvs itself, or one node's own pairs, when nothing else is kept;
// the wrapped sink only reads it.
func (s Sink) with(kvs []any) []any {
	kept, only := 0, []any(nil)
	for n := s.node; n != nil; n = n.prev {
		if len(n.kvs) > 0 {
			kept += len(n.kvs)
			only = n.kvs
		}
	}
	switch {
	case kept == 0:
		return kvs
	case len(kvs) == 0 && kept == len(only):
		return only
	}
	out := make([]any, kept+len(kvs))
	copy(out[kept:], kvs)
	for n := s.node; n != nil; n = n.prev {
		kept -= len(n.kvs)
		copy(out[kept:], n.kvs)
	}
	return out
}
