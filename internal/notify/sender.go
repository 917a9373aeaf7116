package notify

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/reroll/reroll/internal/change"
	"github.com/reroll/reroll/internal/metrics"
)

// DefaultQueueSize is how many changes wait for the sender before new ones
// are refused: far more than a burst of rollouts produces while an endpoint
// is briefly slow, small enough that a dead endpoint costs little memory.
const DefaultQueueSize = 256

// DefaultTimeout bounds one POST.
const DefaultTimeout = 10 * time.Second

// DefaultBackoff is the retry schedule of one change: 5 attempts over about
// 15 seconds, so an endpoint that blips is retried and a dead one does not
// hold the queue for long.
var DefaultBackoff = wait.Backoff{Duration: time.Second, Factor: 2, Jitter: 0.1, Steps: 5, Cap: 10 * time.Second}

// ErrQueueFull is returned by Send when the queue has no room.
var ErrQueueFull = errors.New("the notification queue is full")

// Config configures a Sender.
type Config struct {
	// Sink decides the body of the POST (ALERT_SINK, or Endpoint).
	Sink Sink
	// URL receives the POSTs (ALERT_WEBHOOK_URL, --webhook-url).
	URL string
	// Proxy, when set, is the HTTP proxy for the POSTs (ALERT_WEBHOOK_PROXY);
	// otherwise the usual HTTPS_PROXY and NO_PROXY variables apply.
	Proxy *url.URL
	// AdditionalInfo is appended to every alert (ALERT_ADDITIONAL_INFO).
	AdditionalInfo string
	// QueueSize bounds the changes waiting to be sent; 0 means
	// DefaultQueueSize.
	QueueSize int
	// Backoff is the retry schedule of one change; zero Steps means
	// DefaultBackoff.
	Backoff wait.Backoff
	// Timeout bounds one POST; 0 means DefaultTimeout.
	Timeout time.Duration
	// Log receives a line for every change given up; the zero Logger
	// discards.
	Log logr.Logger
}

// Report is told how the delivery of one change goes. Both functions run on
// the Sender's goroutine and must return quickly; either may be nil.
type Report struct {
	// Retrying is called after each failed attempt that will be retried.
	Retrying func(err error)
	// Done is called once: with nil when the endpoint accepted the change
	// (a 2xx answer), else with the last error, after the last attempt or
	// when the Sender stopped.
	Done func(err error)
}

type delivery struct {
	change change.Change
	report Report
}

// Sender posts changes from a bounded queue, one at a time. Send and Alert
// never block; Start, run by the manager as a Runnable, sends until its
// context ends. The zero value is not usable; use NewSender.
type Sender struct {
	cfg   Config
	http  *http.Client
	queue chan delivery
}

// NewSender returns a Sender for cfg, with the defaults filled in.
func NewSender(cfg Config) *Sender {
	if cfg.Sink == "" {
		cfg.Sink = Webhook
	}
	if cfg.QueueSize <= 0 {
		cfg.QueueSize = DefaultQueueSize
	}
	if cfg.Backoff.Steps == 0 {
		cfg.Backoff = DefaultBackoff
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	if cfg.Proxy != nil {
		transport.Proxy = http.ProxyURL(cfg.Proxy)
	}
	return &Sender{
		cfg:   cfg,
		http:  &http.Client{Timeout: cfg.Timeout, Transport: transport},
		queue: make(chan delivery, cfg.QueueSize),
	}
}

// Endpoint is the Sender's URL, redacted (Redact), for messages.
func (s *Sender) Endpoint() string { return Redact(s.cfg.URL) }

// Send queues c and returns at once; report is told how its delivery goes.
// It returns ErrQueueFull, and report is never called, when the queue has
// no room.
func (s *Sender) Send(c change.Change, report Report) error {
	select {
	case s.queue <- delivery{change: c, report: report}:
		return nil
	default:
		return ErrQueueFull
	}
}

// Alert queues the alert of a rollout and returns at once; it implements
// the controller's Alerter. The result is counted in reroll_alerts_total:
// sent, failed after the last retry, or dropped when the queue is full (a
// rollout never waits for an alert).
func (s *Sender) Alert(_ context.Context, c change.Change) {
	sink := string(s.cfg.Sink)
	err := s.Send(c.Alert(), Report{Done: func(err error) {
		if err != nil {
			metrics.Alert(sink, metrics.AlertFailed)
			return
		}
		metrics.Alert(sink, metrics.AlertSent)
	}})
	if err != nil {
		metrics.Alert(sink, metrics.AlertDropped)
		s.cfg.Log.Info("Dropped alert: the queue is full", "kind", c.Kind, "namespace", c.Namespace, "name", c.Name)
	}
}

// Start sends queued changes one at a time until ctx ends; the Done of
// changes still queued then is called with ctx's error. It implements
// manager.Runnable.
func (s *Sender) Start(ctx context.Context) error {
	for {
		select {
		case <-ctx.Done():
			for {
				select {
				case d := <-s.queue:
					if d.report.Done != nil {
						d.report.Done(ctx.Err())
					}
				default:
					return nil
				}
			}
		case d := <-s.queue:
			s.send(ctx, d)
		}
	}
}

// NeedLeaderElection implements manager.LeaderElectionRunnable: the sender
// runs on every replica, since only the leader's reconcilers queue changes.
func (s *Sender) NeedLeaderElection() bool { return false }

// send posts one change, retrying with backoff, and reports the result.
func (s *Sender) send(ctx context.Context, d delivery) {
	body, err := Body(s.cfg.Sink, d.change, s.cfg.AdditionalInfo)
	var last error
	if err == nil {
		attempt := 0
		err = wait.ExponentialBackoffWithContext(ctx, s.cfg.Backoff, func(ctx context.Context) (bool, error) {
			attempt++
			last = s.post(ctx, body)
			if last != nil && attempt < s.cfg.Backoff.Steps && d.report.Retrying != nil {
				d.report.Retrying(last)
			}
			return last == nil, nil
		})
	}
	if err != nil && last != nil {
		err = last
	}
	if err != nil {
		s.cfg.Log.Info("Gave up sending change", "sink", string(s.cfg.Sink), "endpoint", s.Endpoint(),
			"kind", d.change.Kind, "namespace", d.change.Namespace, "name", d.change.Name, "error", err.Error())
	}
	if d.report.Done != nil {
		d.report.Done(err)
	}
}

// post makes one attempt; any answer outside 2xx is an error.
func (s *Sender) post(ctx context.Context, body []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.cfg.URL, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("building the request to %s: %w", s.Endpoint(), unwrapURLError(err))
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := s.http.Do(req)
	if err != nil {
		return fmt.Errorf("posting to %s: %w", s.Endpoint(), unwrapURLError(err))
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("%s answered %s", s.Endpoint(), resp.Status)
	}
	return nil
}

// unwrapURLError drops the *url.Error wrapper, whose message repeats the
// full URL and with it the endpoint's token.
func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}
