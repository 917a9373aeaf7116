package lazysink

import (
	"slices"

	"github.com/go-logr/logr"
	"github.com/go-logr/zapr"
	"go.uber.org/zap"
)

// Sink is a logr.LogSink that defers WithValues to the lines written: its
// pairs come before a line's own, as the wrapped sink's WithValues would
// put them. WithName and WithCallDepth go to the wrapped sink at once.
type Sink struct {
	sink logr.LogSink
	kvs  []any
}

var (
	_ logr.LogSink          = Sink{}
	_ logr.CallDepthLogSink = Sink{}
	_ zapr.Underlier        = Sink{}
)

// New returns l with its sink wrapped in a Sink.
func New(l logr.Logger) logr.Logger {
	return logr.New(Sink{sink: l.GetSink()})
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

// WithValues implements logr.LogSink: it keeps kvs for the lines written.
func (s Sink) WithValues(kvs ...any) logr.LogSink {
	// Clip: two loggers made from s must not share the appended tail.
	return Sink{sink: s.sink, kvs: append(slices.Clip(s.kvs), kvs...)}
}

// WithName implements logr.LogSink.
func (s Sink) WithName(name string) logr.LogSink {
	return Sink{sink: s.sink.WithName(name), kvs: s.kvs}
}

// WithCallDepth implements logr.CallDepthLogSink.
func (s Sink) WithCallDepth(depth int) logr.LogSink {
	if c, ok := s.sink.(logr.CallDepthLogSink); ok {
		return Sink{sink: c.WithCallDepth(depth), kvs: s.kvs}
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
	if len(s.kvs) == 0 {
		return u.GetUnderlying()
	}
	return u.GetUnderlying().Sugar().With(s.kvs...).Desugar()
}

// with returns the kept pairs followed by kvs.
func (s Sink) with(kvs []any) []any {
	if len(s.kvs) == 0 {
		return kvs
	}
	if len(kvs) == 0 {
		return s.kvs
	}
	out := make([]any, 0, len(s.kvs)+len(kvs))
	return append(append(out, s.kvs...), kvs...)
}
