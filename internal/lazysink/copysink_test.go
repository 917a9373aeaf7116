package lazysink

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/go-logr/logr"
	"github.com/go-logr/zapr"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"k8s.io/klog/v2"
)

// TestSink_AsTheCopyingSink runs 2,000 random programs of WithValues (of
// zero to seven values, odd counts included), WithName, WithCallDepth, V,
// Info, Error and GetUnderlying on a tree of loggers, through the Sink and
// through copySink, the Sink before it kept its pairs in nodes (main
// 25fcef3), and requires the same lines, callers included. The caller's
// slice of each WithValues is overwritten after the call: the pairs kept
// must be a copy.
func TestSink_AsTheCopyingSink(t *testing.T) {
	rng := rand.New(rand.NewPCG(36, 2026))
	written := 0
	for prog := range 2000 {
		seed := rng.Uint64()
		var gotBuf, wantBuf bytes.Buffer
		// One call site for both, so that the callers written match.
		for _, l := range []logr.Logger{New(jsonTo(&gotBuf)), newCopy(jsonTo(&wantBuf))} {
			run(l, rand.New(rand.NewPCG(seed, 1)))
		}
		if gotBuf.String() != wantBuf.String() {
			t.Fatalf("program %d (seed %d) through the Sink:\n%s\nwant, as copySink wrote:\n%s", prog, seed, gotBuf.String(), wantBuf.String())
		}
		written += bytes.Count(wantBuf.Bytes(), []byte("\n"))
	}
	// Positive control: the programs wrote lines, with kept pairs.
	if written < 10000 {
		t.Fatalf("the programs wrote %d lines, want at least 10,000", written)
	}
}

// jsonTo returns a zapr logger writing JSON lines with the caller and
// without time to buf, at every level; zap's own errors (a caller beyond
// the stack after WithCallDepth) are dropped.
func jsonTo(buf *bytes.Buffer) logr.Logger {
	cfg := zap.NewProductionEncoderConfig()
	cfg.TimeKey = ""
	core := zapcore.NewCore(zapcore.NewJSONEncoder(cfg), zapcore.AddSync(buf), zapcore.Level(-2))
	return zapr.NewLogger(zap.New(core, zap.AddCaller(), zap.ErrorOutput(zapcore.AddSync(io.Discard))))
}

// run applies 30 random steps to a tree of loggers grown from root.
func run(root logr.Logger, rng *rand.Rand) {
	loggers := []logr.Logger{root}
	for range 30 {
		l := loggers[rng.IntN(len(loggers))]
		switch rng.IntN(7) {
		case 0, 1:
			kvs := values(rng, rng.IntN(8))
			loggers = append(loggers, l.WithValues(kvs...))
			for i := range kvs {
				kvs[i] = "overwritten"
			}
		case 2:
			loggers = append(loggers, l.WithName(fmt.Sprintf("n%d", rng.IntN(3))))
		case 3:
			loggers = append(loggers, l.WithCallDepth(rng.IntN(2)))
		case 4:
			l.V(rng.IntN(3)).Info(fmt.Sprintf("line %d", rng.IntN(100)), values(rng, rng.IntN(5))...)
		case 5:
			l.Error(errors.New("boom"), "failed", values(rng, rng.IntN(5))...)
		case 6:
			if u, ok := l.GetSink().(zapr.Underlier); ok {
				u.GetUnderlying().Sugar().Infow("underlying", values(rng, 2*rng.IntN(2))...)
			}
		}
	}
}

// values returns n random log values, keys at even places.
func values(rng *rand.Rand, n int) []any {
	out := make([]any, n)
	for i := range out {
		if i%2 == 0 {
			out[i] = fmt.Sprintf("k%d", rng.IntN(5))
			continue
		}
		switch rng.IntN(4) {
		case 0:
			out[i] = rng.IntN(1000)
		case 1:
			out[i] = klog.KRef("ns", fmt.Sprintf("w%d", rng.IntN(9)))
		case 2:
			out[i] = nil
		default:
			out[i] = fmt.Sprintf("v%d", rng.IntN(9))
		}
	}
	return out
}

// copySink is the Sink before it kept its pairs in nodes (main 25fcef3):
// each WithValues appends to a copy of the pairs so far.
type copySink struct {
	sink logr.LogSink
	kvs  []any
}

// newCopy returns l with its sink wrapped in a copySink.
func newCopy(l logr.Logger) logr.Logger {
	return logr.New(copySink{sink: l.GetSink()})
}

// Init implements logr.LogSink: the wrapped sink skips one more frame,
// this copySink's.
func (s copySink) Init(info logr.RuntimeInfo) {
	info.CallDepth++
	s.sink.Init(info)
}

// Enabled implements logr.LogSink.
func (s copySink) Enabled(level int) bool { return s.sink.Enabled(level) }

// Info implements logr.LogSink.
func (s copySink) Info(level int, msg string, kvs ...any) {
	s.sink.Info(level, msg, s.with(kvs)...)
}

// Error implements logr.LogSink.
func (s copySink) Error(err error, msg string, kvs ...any) {
	s.sink.Error(err, msg, s.with(kvs)...)
}

// WithValues implements logr.LogSink: it keeps kvs for the lines written.
func (s copySink) WithValues(kvs ...any) logr.LogSink {
	// Clip: two loggers made from s must not share the appended tail.
	return copySink{sink: s.sink, kvs: append(slices.Clip(s.kvs), kvs...)}
}

// WithName implements logr.LogSink.
func (s copySink) WithName(name string) logr.LogSink {
	return copySink{sink: s.sink.WithName(name), kvs: s.kvs}
}

// WithCallDepth implements logr.CallDepthLogSink.
func (s copySink) WithCallDepth(depth int) logr.LogSink {
	if c, ok := s.sink.(logr.CallDepthLogSink); ok {
		return copySink{sink: c.WithCallDepth(depth), kvs: s.kvs}
	}
	return s
}

// GetUnderlying implements zapr.Underlier: the wrapped zap logger with the
// kept pairs; nil when the wrapped sink is not zap's.
func (s copySink) GetUnderlying() *zap.Logger {
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
func (s copySink) with(kvs []any) []any {
	if len(s.kvs) == 0 {
		return kvs
	}
	if len(kvs) == 0 {
		return s.kvs
	}
	out := make([]any, 0, len(s.kvs)+len(kvs))
	return append(append(out, s.kvs...), kvs...)
}
