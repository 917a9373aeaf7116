package events

import (
	"context"
	"fmt"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
)

// NewManager is ctrl.NewManager(cfg, mo) whose GetEventRecorderFor records
// through Reroll's own Event broadcaster, which posts core/v1 Events with
// protobuf bodies. controller-runtime's recorder builds its Events client
// from the manager's configuration, which leaves the request body to JSON
// (a single ContentType there would also apply to custom resources, which
// have no protobuf). A protobuf body costs a third of a JSON one to encode
// (BenchmarkEventPost; encoding was a fifth of the Event recorder's CPU
// samples on the fan-out bench, docs/benchmarks.md). The
// Events client is a copy of cfg with protobuf as its ContentType: it shares
// the manager's HTTP client, cfg's Accept header (PreferProtobuf) and cfg's
// transport wrappers (the request metrics count its requests).
//
// The Events keep what controller-runtime's recorder writes: the source
// component is the name given to GetEventRecorderFor, the same correlator
// (client-go's: aggregation, repeat counts, spam filter) applies, with
// caches of EventCacheSize entries instead of client-go's 4,096, and with
// mo.Logger at V(1) each Event is logged under the name "events" as
// controller-runtime does; at V(0) no such watcher runs. The returned
// manager's Start stops the broadcaster after the manager has stopped, so
// an Event of the last reconciles is still sent. Leader election records
// its Events through controller-runtime's recorder, as before.
func NewManager(cfg *rest.Config, mo ctrl.Options) (ctrl.Manager, error) {
	mgr, err := ctrl.NewManager(cfg, mo)
	if err != nil {
		return nil, err
	}
	events := rest.CopyConfig(cfg)
	events.ContentType = runtime.ContentTypeProtobuf
	cs, err := corev1client.NewForConfigAndClient(events, mgr.GetHTTPClient())
	if err != nil {
		return nil, fmt.Errorf("creating the Events client: %w", err)
	}
	logger := mo.Logger
	if logger.GetSink() == nil {
		logger = ctrl.Log
	}
	return &eventManager{Manager: mgr, events: newEventBroadcaster(cs.Events(""), logger.WithName("events"))}, nil
}

// EventCacheSize is the number of entries, per cache, that client-go's
// Event correlator keeps in Reroll's recorder. The correlator has three
// LRU caches (the aggregation of similar Events, the counts of repeated
// ones, the per-object spam filter), keyed by the Event's object and
// reason, and the repeat counts by its message too. client-go's default,
// 4,096 entries each, kept about 2 MiB after one change rolled 2,000
// workloads (issue #36), one entry per workload that would not get another
// Event soon. An object past the last EventCacheSize given Events starts
// afresh: its next Event is a new Event rather than a higher count, and
// its spam filter a full budget; an object that Events keep coming for (a
// loop) stays in the caches, so the aggregation and the spam filter hold it
// as before.
const EventCacheSize = 256

// newEventBroadcaster returns a started broadcaster that posts every Event
// through sink, and logs each at V(1) through logger when that level is on.
func newEventBroadcaster(sink corev1client.EventInterface, logger logr.Logger) record.EventBroadcaster {
	b := record.NewBroadcaster(record.WithCorrelatorOptions(record.CorrelatorOptions{LRUCacheSize: EventCacheSize}))
	b.StartRecordingToSink(&corev1client.EventSinkImpl{Interface: sink})
	if log := logger.V(1); log.Enabled() {
		b.StartEventWatcher(func(e *corev1.Event) {
			log.Info(e.Message, "type", e.Type, "object", e.InvolvedObject, "reason", e.Reason)
		})
	}
	return b
}

// eventManager is a manager whose Event recorders are events'.
type eventManager struct {
	ctrl.Manager
	events record.EventBroadcaster
}

// GetEventRecorderFor returns a recorder whose Events name name as their
// source component.
func (m *eventManager) GetEventRecorderFor(name string) record.EventRecorder {
	return m.events.NewRecorder(m.GetScheme(), corev1.EventSource{Component: name})
}

// Start runs the manager until ctx is done, then stops the broadcaster,
// which sends the Events already queued.
func (m *eventManager) Start(ctx context.Context) error {
	defer m.events.Shutdown()
	return m.Manager.Start(ctx)
}
