package lazysink

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/go-logr/logr"
	"github.com/go-logr/zapr"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// zapTo returns a zapr logger writing JSON lines without time to buf, and
// one that counts the encoder clones its core makes (a With each).
func zapTo(buf io.Writer, withs *int) logr.Logger {
	cfg := zap.NewProductionEncoderConfig()
	cfg.TimeKey = ""
	core := zapcore.NewCore(zapcore.NewJSONEncoder(cfg), zapcore.AddSync(buf), zapcore.DebugLevel)
	return zapr.NewLogger(zap.New(countingCore{Core: core, withs: withs}))
}

type countingCore struct {
	zapcore.Core
	withs *int
}

func (c countingCore) With(f []zapcore.Field) zapcore.Core {
	*c.withs++
	return countingCore{Core: c.Core.With(f), withs: c.withs}
}

func (c countingCore) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if c.Enabled(e.Level) {
		return ce.AddCore(e, c)
	}
	return ce
}

func TestSink_WritesWhatTheWrappedSinkWrites(t *testing.T) {
	cases := map[string]func(l logr.Logger){
		"pairs of WithValues come before the line's own": func(l logr.Logger) {
			l.WithValues("controller", "deployment", "namespace", "ns").WithValues("reconcileID", "r1").Info("Rolled workload", "changes", "ConfigMap/cfg")
		},
		"two loggers made from one do not share their pairs": func(l logr.Logger) {
			base := l.WithValues("a", 1)
			x, y := base.WithValues("x", 1), base.WithValues("y", 2)
			x.Info("x")
			y.Info("y")
			base.Info("base")
		},
		"an error line keeps the pairs, then its own, then the error": func(l logr.Logger) {
			l.WithValues("k", "v").Error(errors.New("boom"), "Reconciler error", "attempt", 2)
		},
		"a name applies at once": func(l logr.Logger) {
			l.WithValues("k", "v").WithName("store").WithValues("j", 1).Info("synced")
		},
		"levels: V(1) is written at debug": func(l logr.Logger) {
			l.WithValues("k", "v").V(1).Info("detail")
		},
		"no pairs": func(l logr.Logger) { l.Info("plain", "n", 1) },
	}
	for name, do := range cases {
		t.Run(name, func(t *testing.T) {
			var direct, deferred bytes.Buffer
			var withsDirect, withsDeferred int
			do(zapTo(&direct, &withsDirect))
			do(New(zapTo(&deferred, &withsDeferred)))
			if direct.String() != deferred.String() {
				t.Fatalf("through the Sink:\n%s\nwant, as the wrapped sink writes:\n%s", deferred.String(), direct.String())
			}
			if withsDeferred != 0 {
				t.Fatalf("the Sink made %d encoder clones, want none", withsDeferred)
			}
		})
	}
}

// TestSink_CallsWithOnlyWhenLogging checks the point of the Sink: a
// reconcile that logs nothing costs the core no With.
func TestSink_CallsWithOnlyWhenLogging(t *testing.T) {
	var buf bytes.Buffer
	var withs int
	l := New(zapTo(&buf, &withs))
	for i := range 100 {
		l.WithValues("controller", "deployment").WithValues("reconcileID", i).V(5).Info("not written")
	}
	// Positive control: the same on the wrapped logger clones each time.
	var direct int
	d := zapTo(&bytes.Buffer{}, &direct)
	for i := range 100 {
		d.WithValues("controller", "deployment").WithValues("reconcileID", i).V(5).Info("not written")
	}
	if direct != 200 || withs != 0 || buf.Len() != 0 {
		t.Fatalf("With calls: wrapped %d (want 200), through the Sink %d (want 0); written %q", direct, withs, buf.String())
	}
}

func TestSink_GetUnderlyingCarriesThePairs(t *testing.T) {
	var buf bytes.Buffer
	var withs int
	l := New(zapTo(&buf, &withs)).WithValues("k", "v")
	u, ok := l.GetSink().(zapr.Underlier)
	if !ok {
		t.Fatal("the Sink is not a zapr.Underlier")
	}
	u.GetUnderlying().Sugar().Warnw("Ignoring flag", "flag", "--x")
	if want := `{"level":"warn","msg":"Ignoring flag","k":"v","flag":"--x"}` + "\n"; buf.String() != want {
		t.Fatalf("wrote %q, want %q", buf.String(), want)
	}
}

// TestSink_LoggersMadeFromOneInParallel: reconcile workers make their
// loggers from one controller logger at once; each line carries the
// shared pairs and its own worker's, never another's (run with -race, a
// node written after it was shared shows as a race).
func TestSink_LoggersMadeFromOneInParallel(t *testing.T) {
	var buf bytes.Buffer
	var withs int
	base := New(zapTo(&lockedBuffer{b: &buf}, &withs)).WithValues("controller", "deployment")
	const workers, lines = 8, 200
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range lines {
				base.WithValues("worker", w).WithValues("reconcileID", i).Info("Rolled workload", "worker again", w)
			}
		})
	}
	wg.Wait()
	got := strings.Split(strings.TrimSpace(buf.String()), "\n")
	// Positive control: every line was written.
	if len(got) != workers*lines {
		t.Fatalf("wrote %d lines, want %d", len(got), workers*lines)
	}
	for _, l := range got {
		var w, again int
		if _, err := fmt.Sscanf(l[strings.Index(l, `"worker":`):], `"worker":%d,`, &w); err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		if _, err := fmt.Sscanf(l[strings.Index(l, `"worker again":`):], `"worker again":%d}`, &again); err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		if !strings.HasPrefix(l, `{"level":"info","msg":"Rolled workload","controller":"deployment","worker":`) || w != again {
			t.Fatalf("line %q mixes the pairs of two loggers", l)
		}
	}
}

// lockedBuffer is a bytes.Buffer that goroutines can write at once.
type lockedBuffer struct {
	mu sync.Mutex
	b  *bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}
