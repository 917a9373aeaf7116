package controller

import (
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// EventCacheSize is the number of entries, per cache, that client-go's
// Event correlator keeps in Reroll's recorder. The correlator has three
// LRU caches (the aggregation of similar Events, the counts of repeated
// ones, the per-object spam filter), each keyed by the Event's object and
// reason, and the repeat counts by its message too. client-go's default,
// 4,096 entries each, kept about 2 MiB after one change rolled 2,000
// workloads (issue #36), one entry per workload that will not get another
// Event soon. An object past the last EventCacheSize seen starts afresh:
// its next Event is a new Event rather than a higher count, and its spam
// filter a full budget; an object that Events keep coming for (a loop) stays
// in the caches, so the aggregation and the spam filter hold it as before.
const EventCacheSize = 256

// eventsManager is a manager whose GetEventRecorderFor gives recorders of
// one broadcaster of its own.
type eventsManager struct {
	manager.Manager
	events *broadcaster
}

// GetEventRecorderFor returns a recorder of core/v1 Events whose source
// component is name, as the manager's does.
func (m eventsManager) GetEventRecorderFor(name string) record.EventRecorder {
	return stoppableRecorder{rec: m.events.b.NewRecorder(m.GetScheme(), corev1.EventSource{Component: name}), events: m.events}
}

// broadcaster is an Event broadcaster that can be stopped once.
type broadcaster struct {
	b record.EventBroadcaster

	mu      sync.RWMutex
	stopped bool
}

// stop shuts the broadcaster down once; it waits for the Events queued.
func (b *broadcaster) stop() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.stopped {
		b.stopped = true
		b.b.Shutdown()
	}
}

// stoppableRecorder drops Events once its broadcaster is stopped, as
// controller-runtime's recorder does, instead of logging each as an error.
type stoppableRecorder struct {
	rec    record.EventRecorder
	events *broadcaster
}

func (r stoppableRecorder) Event(obj runtime.Object, eventtype, reason, message string) {
	r.events.mu.RLock()
	defer r.events.mu.RUnlock()
	if !r.events.stopped {
		r.rec.Event(obj, eventtype, reason, message)
	}
}

func (r stoppableRecorder) Eventf(obj runtime.Object, eventtype, reason, messageFmt string, args ...any) {
	r.events.mu.RLock()
	defer r.events.mu.RUnlock()
	if !r.events.stopped {
		r.rec.Eventf(obj, eventtype, reason, messageFmt, args...)
	}
}

func (r stoppableRecorder) AnnotatedEventf(obj runtime.Object, annotations map[string]string, eventtype, reason, messageFmt string, args ...any) {
	r.events.mu.RLock()
	defer r.events.mu.RUnlock()
	if !r.events.stopped {
		r.rec.AnnotatedEventf(obj, annotations, eventtype, reason, messageFmt, args...)
	}
}

// WithEventRecorder returns mgr whose GetEventRecorderFor gives recorders
// of one broadcaster whose correlator caches hold EventCacheSize entries
// each (controller-runtime's own cannot be sized without its deprecated
// EventBroadcaster option, which starts a second sink on the same
// broadcaster once leader election records an Event: every Event then
// costs two requests). It writes through mgr's configuration and HTTP client, and
// logs each Event at V(1), as controller-runtime's recorder does.
//
// stop ends the broadcaster: call it once mgr.Start has returned; it hands
// the Events queued to the sink before it returns, and an Event recorded
// after it is dropped. Calling it again does nothing. The error is that of
// building the Events client.
func WithEventRecorder(mgr manager.Manager) (m manager.Manager, stop func(), err error) {
	c, err := corev1client.NewForConfigAndClient(mgr.GetConfig(), mgr.GetHTTPClient())
	if err != nil {
		return nil, nil, fmt.Errorf("creating the Events client: %w", err)
	}
	b := record.NewBroadcaster(record.WithCorrelatorOptions(record.CorrelatorOptions{LRUCacheSize: EventCacheSize}))
	b.StartRecordingToSink(&corev1client.EventSinkImpl{Interface: c.Events("")})
	log := mgr.GetLogger().WithName("events")
	b.StartEventWatcher(func(e *corev1.Event) {
		log.V(1).Info("Recorded Event", "type", e.Type, "object", e.InvolvedObject, "reason", e.Reason, "message", e.Message)
	})
	events := &broadcaster{b: b}
	return eventsManager{Manager: mgr, events: events}, events.stop, nil
}
