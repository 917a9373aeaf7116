package cli

import (
	"errors"
	"fmt"
	"net/http"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
)

// Exit statuses, as kubectl's own commands use them: 0 done, 1 an error.
// `plan --fail-on-rollout` follows `kubectl diff`: 1 when something would
// roll, and more than 1 (2) when plan itself failed, so that a CI job can
// tell "this change rolls workloads" from "the check did not run".
const (
	ExitOK        = 0
	ExitError     = 1
	ExitWouldRoll = 1
	ExitPlanError = 2
)

var (
	// ErrWouldRoll is returned by `plan --fail-on-rollout` when applying
	// the manifests would roll at least one workload (exit 1).
	ErrWouldRoll = errors.New("applying the manifests would roll workloads")
	// ErrUnreachable wraps every failure to talk to the API server at all:
	// no answer, a refused connection, a TLS failure.
	ErrUnreachable = errors.New("cannot reach the API server")
	// ErrUnauthorized wraps the API server's 401: it did not accept the
	// kubeconfig's credentials.
	ErrUnauthorized = errors.New("the API server did not accept the credentials")
	// ErrDenied is returned when the API server forbade every read a
	// command made (HTTP 403), so that it has nothing to show.
	ErrDenied = errors.New("access denied")
)

// exitError carries an exit status other than ExitError.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// ExitCode returns the exit status for err, the error of a command of
// NewCommand.
func ExitCode(err error) int {
	var ee *exitError
	switch {
	case err == nil:
		return ExitOK
	case errors.Is(err, ErrWouldRoll):
		return ExitWouldRoll
	case errors.As(err, &ee):
		return ee.code
	}
	return ExitError
}

// Run runs `kubectl reroll` with args (without the program name) and
// returns its exit status, having printed any error to streams.ErrOut as
// kubectl does ("error: ..."). ErrWouldRoll prints nothing: plan's output
// already lists what would roll.
func Run(args []string, streams genericiooptions.IOStreams) int {
	cmd := NewCommand(streams)
	cmd.SetArgs(args)
	err := cmd.Execute()
	if err != nil && !errors.Is(err, ErrWouldRoll) {
		fmt.Fprintln(streams.ErrOut, "error:", err)
	}
	return ExitCode(err)
}

// apiHealth watches the answers of the API server to one command's reads,
// through its client's transport, so that a command that turns each failed
// read into a note (status, who-uses) still fails when the failures were
// all there was.
type apiHealth struct {
	mu sync.Mutex
	// answered counts successful answers and 404s: the user may read there.
	answered int
	// forbidden counts 403s; firstForbidden is the first one's request.
	forbidden      int
	firstForbidden string
	// unreachable is the first transport error.
	unreachable error
	host        string
}

func (h *apiHealth) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripper(func(req *http.Request) (*http.Response, error) {
		resp, err := rt.RoundTrip(req)
		h.mu.Lock()
		defer h.mu.Unlock()
		switch {
		case err != nil:
			if h.unreachable == nil && req.Context().Err() == nil {
				h.unreachable = err
			}
		case resp.StatusCode == http.StatusForbidden:
			h.forbidden++
			if h.firstForbidden == "" {
				h.firstForbidden = req.Method + " " + req.URL.Path
			}
		case resp.StatusCode < 400 || resp.StatusCode == http.StatusNotFound:
			h.answered++
		}
		return resp, err
	})
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// verdict returns an error when the command's reads say it has nothing
// true to show: the API server stopped answering, or forbade every read.
func (h *apiHealth) verdict() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.unreachable != nil {
		return fmt.Errorf("%w at %s: %w", ErrUnreachable, h.host, h.unreachable)
	}
	if h.forbidden > 0 && h.answered == 0 {
		return fmt.Errorf("%w: the API server forbade every read (the first: %s); `kubectl auth can-i --list` shows what this user may do", ErrDenied, h.firstForbidden)
	}
	return nil
}

// preflight asks the API server at cfg for its version, which every
// client may read: it tells an unreachable server or rejected credentials
// before the command starts, in one clear error.
func preflight(cfg *rest.Config) error {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return fmt.Errorf("creating the discovery client: %w", err)
	}
	_, err = dc.ServerVersion()
	switch {
	case err == nil, apierrors.IsForbidden(err):
		// A server that forbids /version is there.
		return nil
	case apierrors.IsUnauthorized(err):
		return fmt.Errorf("%w at %s (401 Unauthorized): log in again, or check the kubeconfig's user", ErrUnauthorized, cfg.Host)
	case apierrors.ReasonForError(err) != "" || isStatusError(err):
		// Any other answer from the server: it is reachable.
		return nil
	}
	return fmt.Errorf("%w at %s: %w", ErrUnreachable, cfg.Host, err)
}

func isStatusError(err error) bool {
	var s apierrors.APIStatus
	return errors.As(err, &s)
}
