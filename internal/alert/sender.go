package alert

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/reroll/reroll/internal/metrics"
	"github.com/reroll/reroll/internal/redact"
)

// DefaultQueueSize is how many alerts wait for the sender before new ones
// are dropped: far more than a burst of rollouts produces while a sink is
// briefly slow, small enough that a dead sink costs little memory.
const DefaultQueueSize = 256

// DefaultBackoff is the retry schedule of one alert: 5 attempts over about
// 15 seconds, so a sink that blips is retried and a dead one does not hold
// the queue for long.
var DefaultBackoff = wait.Backoff{Duration: time.Second, Factor: 2, Jitter: 0.1, Steps: 5, Cap: 10 * time.Second}

// Config configures a Sender.
type Config struct {
	// Sink decides the body of the POST (ALERT_SINK).
	Sink Sink
	// URL receives the POSTs (ALERT_WEBHOOK_URL).
	URL string
	// Proxy, when set, is the HTTP proxy for the POSTs (ALERT_WEBHOOK_PROXY);
	// otherwise the usual HTTPS_PROXY and NO_PROXY variables apply.
	Proxy *url.URL
	// AdditionalInfo is appended to every alert (ALERT_ADDITIONAL_INFO).
	AdditionalInfo string
	// QueueSize bounds the alerts waiting to be sent; 0 means
	// DefaultQueueSize.
	QueueSize int
	// Backoff is the retry schedule of one alert; zero Steps means
	// DefaultBackoff.
	Backoff wait.Backoff
	// Timeout bounds one POST; 0 means 10 seconds.
	Timeout time.Duration
	// Log receives a line for every alert given up; the zero Logger
	// discards.
	Log logr.Logger
}

// Sender posts alerts from a bounded queue. Alert never blocks; Start, run
// by the manager as a Runnable, sends until its context ends. The zero value
// is not usable; use NewSender.
type Sender struct {
	cfg   Config
	http  *http.Client
	queue chan Alert
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
		cfg.Timeout = 10 * time.Second
	}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	if cfg.Proxy != nil {
		transport.Proxy = http.ProxyURL(cfg.Proxy)
	}
	return &Sender{
		cfg:   cfg,
		http:  &http.Client{Timeout: cfg.Timeout, Transport: transport},
		queue: make(chan Alert, cfg.QueueSize),
	}
}

// Alert queues a for sending and returns at once. When the queue is full
// the alert is dropped and counted: a rollout never waits for a sink.
func (s *Sender) Alert(_ context.Context, a Alert) {
	select {
	case s.queue <- a:
	default:
		metrics.Alert(string(s.cfg.Sink), metrics.AlertDropped)
		s.cfg.Log.Info("Dropped alert: the queue is full", "kind", a.Kind, "namespace", a.Namespace, "name", a.Name)
	}
}

// Start sends queued alerts one at a time until ctx ends; alerts still
// queued then are not sent. It implements manager.Runnable.
func (s *Sender) Start(ctx context.Context) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case a := <-s.queue:
			s.send(ctx, a)
		}
	}
}

// NeedLeaderElection implements manager.LeaderElectionRunnable: the sender
// runs on every replica, since only the leader's reconcilers queue alerts.
func (s *Sender) NeedLeaderElection() bool { return false }

// send posts a, retrying with backoff, and counts the result.
func (s *Sender) send(ctx context.Context, a Alert) {
	body, err := Body(s.cfg.Sink, a, s.cfg.AdditionalInfo)
	var last error
	if err == nil {
		err = wait.ExponentialBackoffWithContext(ctx, s.cfg.Backoff, func(ctx context.Context) (bool, error) {
			last = s.post(ctx, body)
			return last == nil, nil
		})
	}
	if err != nil {
		if last != nil {
			err = last
		}
		metrics.Alert(string(s.cfg.Sink), metrics.AlertFailed)
		s.cfg.Log.Info("Gave up sending alert", "kind", a.Kind, "namespace", a.Namespace, "name", a.Name, "error", err.Error())
		return
	}
	metrics.Alert(string(s.cfg.Sink), metrics.AlertSent)
}

// post makes one attempt; any answer outside 2xx is an error.
func (s *Sender) post(ctx context.Context, body []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.cfg.URL, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("building the alert request: %w", redact.Error(err))
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := s.http.Do(req)
	if err != nil {
		// The URL may hold a token (Slack's and Teams' do): name the host only.
		return fmt.Errorf("posting the alert to %s: %w", redact.URL(s.cfg.URL), redact.Error(err))
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("alert sink %s answered %s", redact.URL(s.cfg.URL), resp.Status)
	}
	return nil
}
