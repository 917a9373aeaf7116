package controller

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reroll/reroll/internal/firstsight"
	"github.com/reroll/reroll/internal/plan"
	"github.com/reroll/reroll/internal/trigger"
)

// The model-based test of "no change is ever lost" (issue 21). A seeded
// generator interleaves, with sub-second gaps, workload creates, ConfigMap
// and Secret creates, updates and deletes, label-only writes (by another
// field manager) and Reroll stops and restarts; a model computes, from the
// script alone, which workloads must roll in each burst; a watch of the
// Deployments, in resourceVersion order, counts what did. 0 missed, 0
// duplicate, 0 spurious.
//
// The script is made of bursts: a few events with gaps of at most
// modelGap, shorter in all than the coalescing window, then a barrier that
// waits until every workload's record is what the model says and the watch
// has caught up, and until the clock is in a later second. So each burst
// is one coalescing burst, and the model does not depend on when Reroll
// reconciles within it; except on a loaded machine, where the writes
// themselves (not the gaps) can take seconds: the test records when each
// write was sent and answered, and a workload may roll once per coalescing
// burst those times allow (model.splits), never more. The first burst is made before Reroll is
// installed: nothing of it may roll. Reroll is either up for a whole burst
// or stopped before its first event and started after its last: a
// restart, as Reloader's flags suite does before each spec, or a crash.
//
// Per workload and burst, the model expects one rollout when, after the
// workload's creation, the burst changed the data of an object it reads,
// created one (--reload-on-create) or deleted one (--reload-on-delete);
// none otherwise, and none when the data is back to what its pods were
// last rolled for (a create or delete held by its flag came between: the
// pod template's config hash already is the one the data gives). Each object gets at most one event per burst (two would
// fold into one, or not, depending on Reroll's timing). The generator
// leaves out what the API cannot tell while no Reroll watches: an object
// deleted, in a burst Reroll is stopped for, that a workload created in
// that burst reads (docs/design.md, "First sight"). One edge of the
// one-second resolution is modelled from the API's own timestamps: with
// Reroll stopped, an object created just before a workload that reads it,
// in the same second, counts as created after it (--reload-on-create).
//
// REROLL_SEED=n replays one seed; REROLL_MODEL_SEEDS=n runs n seeds from
// REROLL_MODEL_FIRST_SEED (default 1; `make soak SEEDS=n` runs many);
// REROLL_MODEL_PARALLEL sets how many run at once (default 10).

const (
	// modelWindow is Reroll's coalescing window in the model test.
	modelWindow = 2 * time.Second
	// modelGap is the longest gap between two events of a burst.
	modelGap = 150 * time.Millisecond
	// modelBursts is the number of bursts after the installation.
	modelBursts = 4
	// modelMaxWorkloads bounds the workloads of one seed.
	modelMaxWorkloads = 6
)

// modelPool are the objects the workloads of a seed read.
var modelPool = []string{"ConfigMap/c0", "ConfigMap/c1", "ConfigMap/c2", "Secret/s0", "Secret/s1"}

func TestWorkloadReconciler_ModelNoChangeLost(t *testing.T) {
	t.Parallel()
	seeds, parallel := modelSeeds(t)
	sem := make(chan struct{}, parallel)
	var wg sync.WaitGroup
	for _, seed := range seeds {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			// Subtests run from goroutines of their own, not t.Parallel,
			// so that -parallel (GOMAXPROCS) does not serialize them.
			t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
				defer func() {
					if t.Failed() {
						t.Logf("replay with REROLL_SEED=%d go test -run 'TestWorkloadReconciler_ModelNoChangeLost' ./internal/controller/", seed)
					}
				}()
				runModel(t, seed)
			})
		})
	}
	wg.Wait()
}

// modelSeeds reads the seeds and the parallelism from the environment.
func modelSeeds(t *testing.T) ([]uint64, int) {
	t.Helper()
	num := func(name string, def uint64) uint64 {
		v := os.Getenv(name)
		if v == "" {
			return def
		}
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("%s=%q: %v", name, v, err)
		}
		return n
	}
	parallel := int(max(1, num("REROLL_MODEL_PARALLEL", 10)))
	if v := os.Getenv("REROLL_SEED"); v != "" {
		return []uint64{num("REROLL_SEED", 0)}, parallel
	}
	first, n := num("REROLL_MODEL_FIRST_SEED", 1), num("REROLL_MODEL_SEEDS", 50)
	seeds := make([]uint64, 0, n)
	for i := range n {
		seeds = append(seeds, first+i)
	}
	return seeds, parallel
}

// modelObject is the model's state of one ConfigMap or Secret.
type modelObject struct {
	id      string            // "ConfigMap/c0"
	data    map[string]string // nil: it does not exist
	created time.Time         // its creationTimestamp, from the API
}

func (o *modelObject) kind() string { k, _, _ := strings.Cut(o.id, "/"); return k }
func (o *modelObject) name() string { _, n, _ := strings.Cut(o.id, "/"); return n }

// modelWorkload is the model's state of one Deployment.
type modelWorkload struct {
	name    string
	reads   []string  // ids of the objects it reads (envFrom, optional)
	created time.Time // its creationTimestamp, from the API
	burst   int       // the burst it was created in
	// rolls is the number of rollouts seen at the last barrier, and hash
	// the pod template's config hash then.
	rolls int
	hash  string
}

// modelEvent is one step of a burst.
type modelEvent struct {
	op       string // create, update, delete, label, workload
	id       string // the object, or the workload's name
	gap      time.Duration
	workload *modelWorkload
}

func (e modelEvent) String() string {
	if e.workload != nil {
		return fmt.Sprintf("+%s create Deployment/%s reading %s", e.gap, e.id, strings.Join(e.workload.reads, ","))
	}
	return fmt.Sprintf("+%s %s %s", e.gap, e.op, e.id)
}

type model struct {
	t         *testing.T
	ns        string
	rng       *rand.Rand
	opts      Options
	objects   map[string]*modelObject
	workloads []*modelWorkload
	watch     *rolloutWatch
	// mem is the first-sight memory of the running Reroll: with
	// DeferRecord, where a workload not rolled yet keeps its baseline.
	mem    *firstsight.Memory
	script []string
	values int
	// writes are the writes of the current burst while Reroll is up, in
	// order, with when each request was sent and when its answer came.
	writes []modelWrite
}

// writesOf lists the writes of the burst that touch w, with when each
// was sent and answered, for the log.
func (m *model) writesOf(w *modelWorkload) string {
	var out []string
	for _, x := range m.writes {
		if x.id == w.name || slices.Contains(w.reads, x.id) {
			out = append(out, fmt.Sprintf("%s sent %s answered %s", x.id, x.start.Format("15:04:05.000"), x.end.Format("15:04:05.000")))
		}
	}
	return strings.Join(out, "; ")
}

// modelWrite is one write of a burst: to object id (or the workload id),
// at some instant between start and end.
type modelWrite struct {
	id         string
	start, end time.Time
}

// splits is how many times the writes of the burst that touch w (its own
// create and every write to an object it reads: each starts or extends its
// coalescing wait) may have been more than the coalescing window apart:
// the latest a write can have been made is when its answer came, the
// earliest is when it was sent. Each such gap may legitimately end a
// coalescing burst and start another, so up to splits+1 rollouts are one
// per coalescing burst. Where the recorded times show the writes within
// one window, no split is allowed.
func (m *model) splits(w *modelWorkload) int {
	var prev *modelWrite
	n := 0
	for i := range m.writes {
		cur := &m.writes[i]
		if cur.id != w.name && !slices.Contains(w.reads, cur.id) {
			continue
		}
		if prev != nil && cur.end.Sub(prev.start) >= m.opts.CoalesceWindow {
			n++
		}
		prev = cur
	}
	return n
}

func runModel(t *testing.T, seed uint64) {
	g := newT(t)
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	m := &model{t: t, ns: newNamespace(t), rng: rng, objects: map[string]*modelObject{}}
	for _, id := range modelPool {
		m.objects[id] = &modelObject{id: id}
	}
	m.opts = Options{PlanOptions: plan.Options{ReloadOnCreate: rng.IntN(2) == 0, ReloadOnDelete: rng.IntN(2) == 0}, CoalesceWindow: modelWindow, CoalesceMaxWait: time.Minute}
	// Even seeds leave the record off workloads until they roll (issue
	// #36), where it applies (not with --reload-on-delete).
	m.opts.DeferRecord = seed%2 == 0 && !m.opts.ReloadOnDelete
	m.note("seed %d: --reload-on-create=%t --reload-on-delete=%t defer-record=%t", seed, m.opts.ReloadOnCreate, m.opts.ReloadOnDelete, m.opts.DeferRecord)
	m.watch = watchRollouts(t, m.ns)
	defer func() {
		if t.Failed() {
			t.Logf("script:\n%s", strings.Join(m.script, "\n"))
		}
	}()

	// Before the installation: whatever happens here rolls nothing.
	m.run(0, m.generate(0, true), true)
	// The installation's second counts as after it: install in a later
	// second than anything before it.
	nextSecond(t, time.Now())
	installed := time.Now()
	nextSecond(t, installed)
	m.opts.InstalledAt = installed
	m.note("installed at %s", installed.Format(time.RFC3339Nano))
	rr := m.start()
	m.barrier(0, nil)

	for b := 1; b <= modelBursts; b++ {
		stopped := rng.IntN(3) == 0
		if stopped {
			rr.stop(t)
		}
		events := m.generate(b, stopped)
		expected := m.run(b, events, stopped)
		if stopped {
			rr = m.start()
		}
		m.barrier(b, expected)
	}
	// Nothing more comes.
	g.Consistently(func() map[string]int { return m.watch.counts() }, modelWindow+2*time.Second).Should(gomega.Equal(m.counts()))
}

// start starts Reroll with a first-sight memory of its own, as a restarted
// process has.
func (m *model) start() *reroll {
	m.mem = firstsight.NewMemory()
	m.opts.creations = m.mem
	return startReroll(m.t, m.ns, m.opts)
}

func (m *model) note(format string, args ...any) {
	m.script = append(m.script, fmt.Sprintf(format, args...))
}

func (m *model) counts() map[string]int {
	out := map[string]int{}
	for _, w := range m.workloads {
		if w.rolls > 0 {
			out[w.name] = w.rolls
		}
	}
	return out
}

// generate makes the events of burst b; stopped says Reroll is stopped
// through it. Burst 0 is before the installation.
func (m *model) generate(b int, stopped bool) []modelEvent {
	rng := m.rng
	touched := map[string]bool{}
	var events []modelEvent
	gap := func() time.Duration { return time.Duration(rng.Int64N(int64(modelGap))).Truncate(time.Millisecond) }
	absent := func() []string {
		var out []string
		for _, id := range modelPool {
			if m.objects[id].data == nil && !touched[id] {
				out = append(out, id)
			}
		}
		return out
	}
	// Objects created together with the workloads that follow.
	if ids := absent(); len(ids) > 0 && (b == 0 || rng.IntN(3) == 0) {
		for _, id := range ids {
			if b == 0 || rng.IntN(2) == 0 {
				touched[id] = true
				events = append(events, modelEvent{op: "create", id: id, gap: gap()})
			}
		}
	}
	// Workloads.
	created := map[string]bool{}
	for n := rng.IntN(3); n > 0 && len(m.workloads) < modelMaxWorkloads; n-- {
		w := &modelWorkload{name: fmt.Sprintf("w%d", len(m.workloads)), burst: b}
		for _, i := range rng.Perm(len(modelPool))[:1+rng.IntN(2)] {
			w.reads = append(w.reads, modelPool[i])
			created[modelPool[i]] = true
		}
		slices.Sort(w.reads)
		m.workloads = append(m.workloads, w)
		events = append(events, modelEvent{op: "workload", id: w.name, gap: gap(), workload: w})
	}
	// Then changes, each object at most once.
	for n := 1 + rng.IntN(4); n > 0; n-- {
		var free []string
		for _, id := range modelPool {
			if !touched[id] {
				free = append(free, id)
			}
		}
		if len(free) == 0 {
			break
		}
		id := free[rng.IntN(len(free))]
		touched[id] = true
		op := "create"
		if m.objects[id].data != nil || slices.ContainsFunc(events, func(e modelEvent) bool { return e.id == id }) {
			switch r := rng.IntN(4); {
			case r < 2:
				op = "update"
			case r == 2:
				op = "label"
			default:
				op = "delete"
			}
		}
		if op == "delete" && stopped && created[id] {
			// Unknowable: no Reroll saw the delete, and the workload that
			// reads it has no record yet.
			op = "label"
		}
		events = append(events, modelEvent{op: op, id: id, gap: gap()})
	}
	return events
}

// run applies the events of burst b in order, with their gaps, and
// returns the rollouts the model expects by workload name.
func (m *model) run(b int, events []modelEvent, stopped bool) map[string]int {
	t, g := m.t, newT(m.t)
	m.note("burst %d (Reroll %s):", b, map[bool]string{true: "stopped", false: "up"}[stopped])
	expected := map[string]int{}
	m.writes = nil
	began := time.Now()
	// wrote records the write of e that was sent at start and answered now.
	wrote := func(e modelEvent, line int, start time.Time) {
		end := time.Now()
		m.script[line] += fmt.Sprintf("  (sent at %s, answered at %s)", start.Sub(began).Round(time.Millisecond), end.Sub(began).Round(time.Millisecond))
		if !stopped {
			m.writes = append(m.writes, modelWrite{id: e.id, start: start, end: end})
		}
	}
	for _, e := range events {
		line := len(m.script)
		m.note("  %s", e)
		time.Sleep(e.gap) // the generator's pacing, not a wait for a condition
		start := time.Now()
		if e.workload != nil {
			d := modelDeployment(m.ns, e.workload)
			g.Expect(k8s.Create(t.Context(), d, client.FieldOwner("writer"))).To(gomega.Succeed())
			wrote(e, line, start)
			e.workload.created = d.CreationTimestamp.Time
			// Objects created together with it, before it, in this burst.
			for _, id := range e.workload.reads {
				o := m.objects[id]
				if b > 0 && stopped && m.opts.ReloadOnCreate && o.data != nil && o.created.Unix() >= e.workload.created.Unix() &&
					slices.ContainsFunc(events, func(x modelEvent) bool { return x.op == "create" && x.id == id }) {
					// The one-second edge: with no Reroll watching, the
					// API cannot order them (docs/design.md).
					expected[e.workload.name] = 1
				}
			}
			continue
		}
		o := m.objects[e.id]
		relevant := false
		switch e.op {
		case "create":
			o.data = m.newData()
			created := m.create(o)
			o.created = created
			relevant = m.opts.ReloadOnCreate
		case "update":
			o.data = m.newData()
			m.update(o)
			relevant = true
		case "delete":
			g.Expect(k8s.Delete(t.Context(), m.object(o))).To(gomega.Succeed())
			o.data = nil
			relevant = m.opts.ReloadOnDelete
		case "label":
			patch := []byte(fmt.Sprintf(`{"metadata":{"labels":{"touched":"%d"}}}`, m.nextValue()))
			g.Expect(k8s.Patch(t.Context(), m.object(o), client.RawPatch(types.MergePatchType, patch), client.FieldOwner("labeler"))).To(gomega.Succeed())
		}
		wrote(e, line, start)
		if !relevant || b == 0 {
			continue
		}
		for _, w := range m.workloads {
			if !w.created.IsZero() && slices.Contains(w.reads, e.id) {
				expected[w.name] = 1
			}
		}
	}
	return expected
}

func (m *model) nextValue() int {
	m.values++
	return m.values
}

func (m *model) newData() map[string]string {
	return map[string]string{"k": strconv.Itoa(m.nextValue())}
}

// object is the API object of o, with its data when it exists.
func (m *model) object(o *modelObject) client.Object {
	meta := metav1.ObjectMeta{Namespace: m.ns, Name: o.name()}
	if o.kind() == "Secret" {
		s := &corev1.Secret{ObjectMeta: meta, Data: map[string][]byte{}}
		for k, v := range o.data {
			s.Data[k] = []byte(v)
		}
		return s
	}
	return &corev1.ConfigMap{ObjectMeta: meta, Data: o.data}
}

func (m *model) create(o *modelObject) time.Time {
	obj := m.object(o)
	newT(m.t).Expect(k8s.Create(m.t.Context(), obj, client.FieldOwner("writer"))).To(gomega.Succeed())
	return obj.GetCreationTimestamp().Time
}

func (m *model) update(o *modelObject) {
	update(m.t, m.object(o), func(obj client.Object) {
		switch x := obj.(type) {
		case *corev1.Secret:
			x.Data = m.object(o).(*corev1.Secret).Data
		case *corev1.ConfigMap:
			x.Data = o.data
		}
	})
}

// record is the record the model expects on w: every object it reads,
// with the zero key's digests (first 16 hex characters of the SHA-256 of
// the value), null when it does not exist.
func (m *model) record(w *modelWorkload) string {
	r := map[string]map[string]string{}
	for _, id := range w.reads {
		o := m.objects[id]
		if o.data == nil {
			r[id] = nil
			continue
		}
		r[id] = map[string]string{}
		for k, v := range o.data {
			sum := sha256.Sum256([]byte(v))
			r[id][k] = hex.EncodeToString(sum[:])[:16]
		}
	}
	b, _ := json.Marshal(r)
	return string(b)
}

// barrier waits until burst b has settled: every workload's record is the
// model's, the watch has seen every workload's latest version, and the
// clock is in a later second than the burst's last event. Then it compares
// the rollouts seen in the burst with expected.
func (m *model) barrier(b int, expected map[string]int) {
	t, g := m.t, newT(m.t)
	end := time.Now()
	for _, w := range m.workloads {
		d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: m.ns, Name: w.name}}
		want := m.record(w)
		g.Eventually(func() string {
			cur := get(t, d)
			if rec := cur.Annotations[ObservedAnnotation]; rec != "" || !m.opts.DeferRecord {
				return rec
			}
			// Not rolled yet: the baseline Reroll keeps in its place.
			return m.mem.Baseline(cur.UID)
		}).Should(gomega.Equal(want), "burst %d: the record (or baseline) of %s", b, w.name)
		rv, err := strconv.ParseUint(get(t, d).ResourceVersion, 10, 64)
		g.Expect(err).NotTo(gomega.HaveOccurred())
		g.Eventually(func() bool { return m.watch.seen(w.name, rv) }).Should(gomega.BeTrue(), "the watch reaches %s at %d", w.name, rv)
	}
	seen := m.watch.counts()
	for _, w := range m.workloads {
		got, want := seen[w.name]-w.rolls, expected[w.name]
		sum := sha256.Sum256([]byte(m.record(w)))
		if trigger := hex.EncodeToString(sum[:]); want == 1 && trigger == w.hash {
			// Back to the data the pods were last rolled for (a create or
			// delete held by its flag came between): the pod template
			// already says so, and there is nothing to roll.
			want = 0
		}
		// The writes may have been spread over more than one coalescing
		// window (a loaded machine): one rollout per coalescing burst.
		allowed := 1 + m.splits(w)
		switch {
		case got < want:
			t.Errorf("burst %d: %s missed a rollout", b, w.name)
		case got > allowed && want == 1:
			t.Errorf("burst %d: %s rolled %d times for %d coalescing bursts (duplicate)", b, w.name, got, allowed)
		case got > 0 && want == 0:
			t.Errorf("burst %d: %s rolled %d times, expected none (spurious)", b, w.name, got)
		case got > 1:
			t.Logf("burst %d: %s rolled %d times: its writes may have been more than the %s window apart %d times (%s)", b, w.name, got, m.opts.CoalesceWindow, allowed-1, m.writesOf(w))
		}
		if want == 1 && got >= 1 && got <= allowed {
			// The rollout's pod template reflects the burst's data.
			g.Expect(m.watch.last(w.name)).To(gomega.Equal(hex.EncodeToString(sum[:])), "burst %d: the trigger of %s", b, w.name)
		}
		w.rolls, w.hash = seen[w.name], m.watch.last(w.name)
	}
	nextSecond(t, end)
}

// modelDeployment is a Deployment of no replicas (rollouts without pods)
// that reads w's objects through optional envFrom.
func modelDeployment(ns string, w *modelWorkload) *appsv1.Deployment {
	d := deployment(ns, w.name, autoOn, podSpec())
	d.Spec.Replicas = ptr.To[int32](0)
	c := &d.Spec.Template.Spec.Containers[0]
	for _, id := range w.reads {
		kind, name, _ := strings.Cut(id, "/")
		ref := corev1.LocalObjectReference{Name: name}
		if kind == "Secret" {
			c.EnvFrom = append(c.EnvFrom, corev1.EnvFromSource{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: ref, Optional: ptr.To(true)}})
		} else {
			c.EnvFrom = append(c.EnvFrom, corev1.EnvFromSource{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: ref, Optional: ptr.To(true)}})
		}
	}
	return d
}

// rolloutWatch counts each Deployment's rollouts, in resourceVersion order,
// from one watch: each change of its pod template's config hash is one.
type rolloutWatch struct {
	mu     sync.Mutex
	hashes map[string][]string
	lastRV map[string]uint64
}

func watchRollouts(t *testing.T, ns string) *rolloutWatch {
	t.Helper()
	g := newT(t)
	wc, err := client.NewWithWatch(plane.Config, client.Options{Scheme: scheme})
	g.Expect(err).NotTo(gomega.HaveOccurred())
	var list appsv1.DeploymentList
	g.Expect(wc.List(t.Context(), &list, client.InNamespace(ns))).To(gomega.Succeed())
	rw := &rolloutWatch{hashes: map[string][]string{}, lastRV: map[string]uint64{}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	go func() {
		defer close(done)
		rv := list.ResourceVersion
		for ctx.Err() == nil {
			w, err := wc.Watch(ctx, &appsv1.DeploymentList{}, client.InNamespace(ns), &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: rv}})
			if err != nil {
				continue
			}
			for e := range w.ResultChan() {
				d, ok := e.Object.(*appsv1.Deployment)
				if !ok || (e.Type != watch.Added && e.Type != watch.Modified) {
					continue
				}
				rv = d.ResourceVersion
				rw.saw(d)
			}
			w.Stop()
		}
	}()
	return rw
}

func (rw *rolloutWatch) saw(d *appsv1.Deployment) {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	hash := d.Spec.Template.Annotations[trigger.ConfigHashAnnotation]
	hs := rw.hashes[d.Name]
	if hash != "" && (len(hs) == 0 || hs[len(hs)-1] != hash) {
		rw.hashes[d.Name] = append(hs, hash)
	}
	rw.lastRV[d.Name], _ = strconv.ParseUint(d.ResourceVersion, 10, 64)
}

func (rw *rolloutWatch) seen(name string, rv uint64) bool {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	return rw.lastRV[name] >= rv
}

func (rw *rolloutWatch) counts() map[string]int {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	out := map[string]int{}
	for n, hs := range rw.hashes {
		out[n] = len(hs)
	}
	return out
}

func (rw *rolloutWatch) last(name string) string {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	hs := rw.hashes[name]
	if len(hs) == 0 {
		return ""
	}
	return hs[len(hs)-1]
}

// The model's notion of a coalescing burst is exact: a split is allowed
// only where the recorded times leave room for a gap of a whole window.
func TestModelSplits_AllowsARolloutPerGapTheWriteTimesLeaveRoomFor(t *testing.T) {
	at := func(ms int) time.Time { return time.Unix(1000, 0).Add(time.Duration(ms) * time.Millisecond) }
	w := &modelWorkload{name: "w0", reads: []string{"ConfigMap/c0", "Secret/s0"}}
	for name, tc := range map[string]struct {
		writes []modelWrite
		want   int
	}{
		"writes answered within the window are one burst": {
			writes: []modelWrite{{"ConfigMap/c0", at(0), at(100)}, {"Secret/s0", at(200), at(1900)}},
		},
		"a write answered a window after the previous was sent may be a second burst": {
			writes: []modelWrite{{"ConfigMap/c0", at(0), at(100)}, {"Secret/s0", at(200), at(2000)}},
			want:   1,
		},
		"writes to objects the workload does not read do not count": {
			writes: []modelWrite{{"ConfigMap/c0", at(0), at(100)}, {"ConfigMap/c1", at(1500), at(3000)}, {"Secret/s0", at(1600), at(1700)}},
		},
		"the workload's own create starts its wait": {
			writes: []modelWrite{{"w0", at(0), at(100)}, {"ConfigMap/c0", at(2500), at(2600)}, {"Secret/s0", at(2700), at(2800)}},
			want:   1,
		},
		"each gap counts": {
			writes: []modelWrite{{"ConfigMap/c0", at(0), at(100)}, {"Secret/s0", at(2500), at(2600)}, {"ConfigMap/c0", at(4700), at(4800)}},
			want:   2,
		},
	} {
		t.Run(name, func(t *testing.T) {
			m := &model{opts: Options{CoalesceWindow: 2 * time.Second}, writes: tc.writes}
			if got := m.splits(w); got != tc.want {
				t.Errorf("splits = %d, want %d", got, tc.want)
			}
		})
	}
}
