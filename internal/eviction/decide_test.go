package eviction

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"
)

var (
	t0     = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	before = t0.Add(-time.Hour)
	after  = t0.Add(time.Minute)
)

// pod returns an owned, Ready pod named name with UID "uid-"+name.
func pod(name string, created time.Time, mutate ...func(*Pod)) Pod {
	p := Pod{Name: name, UID: types.UID("uid-" + name), Created: created, Ready: true, Owned: true}
	for _, m := range mutate {
		m(&p)
	}
	return p
}

func ref(name string) PodRef { return PodRef{Name: name, UID: types.UID("uid-" + name)} }

func notReady(p *Pod)    { p.Ready = false }
func terminating(p *Pod) { p.Terminating = true }
func bare(p *Pod)        { p.Owned = false }

func TestDecide(t *testing.T) {
	change := &Change{Hash: "h2", At: t0.Add(500 * time.Millisecond)}
	cases := map[string]struct {
		// in is the decision's input.
		in Input
		// want is the expected decision.
		want Decision
	}{
		"nothing recorded, no change: nothing to do": {
			in:   Input{Pods: []Pod{pod("a", before)}, Desired: 1},
			want: Decision{},
		},
		"a change starts a restart with the pods created before it, and evicts the first": {
			in: Input{Pods: []Pod{pod("b", before), pod("a", before), pod("c", t0)}, Change: change, Desired: 3, MaxUnavailable: 1},
			want: Decision{
				Progress: &Progress{Hash: "h2", Since: t0, Pending: []PodRef{ref("a"), ref("b"), ref("c")}},
				Evict:    []PodRef{ref("a")}, Started: 3,
				Waiting: "0 of 3 pods unavailable, at most 1 allowed; 2 pods still to evict",
			},
		},
		"a StatefulSet's pods go highest ordinal first": {
			in: Input{Pods: []Pod{pod("db-2", before), pod("db-10", before), pod("db-0", before)}, Change: change, Desired: 3, MaxUnavailable: 1, HighestOrdinalFirst: true},
			want: Decision{
				Progress: &Progress{Hash: "h2", Since: t0, Pending: []PodRef{ref("db-10"), ref("db-2"), ref("db-0")}},
				Evict:    []PodRef{ref("db-10")}, Started: 3,
				Waiting: "0 of 3 pods unavailable, at most 1 allowed; 2 pods still to evict",
			},
		},
		"a pod created after the change is never evicted": {
			in: Input{Pods: []Pod{pod("a", before), pod("new", t0.Add(time.Second))}, Change: change, Desired: 2, MaxUnavailable: 1},
			want: Decision{
				Progress: &Progress{Hash: "h2", Since: t0, Pending: []PodRef{ref("a")}},
				Evict:    []PodRef{ref("a")}, Started: 1,
			},
		},
		"a bare pod is never evicted and is reported": {
			in: Input{Pods: []Pod{pod("a", before), pod("lonely", before, bare)}, Change: change, Desired: 1, MaxUnavailable: 1},
			want: Decision{
				Progress: &Progress{Hash: "h2", Since: t0, Pending: []PodRef{ref("a")}},
				Evict:    []PodRef{ref("a")}, Started: 1, Bare: []string{"lonely"},
			},
		},
		"a change that finds no old pod starts nothing": {
			in:   Input{Pods: []Pod{pod("new", after)}, Change: change, Desired: 1, MaxUnavailable: 1},
			want: Decision{},
		},
		"the replacement is not Ready yet: wait": {
			in: Input{
				Pods:     []Pod{pod("b", before), pod("a2", after, notReady)},
				Progress: &Progress{Hash: "h2", Since: t0, Pending: []PodRef{ref("b")}}, Desired: 2, MaxUnavailable: 1,
			},
			want: Decision{
				Progress: &Progress{Hash: "h2", Since: t0, Pending: []PodRef{ref("b")}},
				Waiting:  "1 of 2 pods unavailable, at most 1 allowed; 1 pods still to evict",
			},
		},
		"the evicted pod is gone and its replacement not created yet: wait": {
			in: Input{
				Pods:     []Pod{pod("b", before)},
				Progress: &Progress{Hash: "h2", Since: t0, Pending: []PodRef{ref("a"), ref("b")}}, Desired: 2, MaxUnavailable: 1,
			},
			want: Decision{
				Progress: &Progress{Hash: "h2", Since: t0, Pending: []PodRef{ref("b")}},
				Waiting:  "1 of 2 pods unavailable, at most 1 allowed; 1 pods still to evict",
			},
		},
		"killed after an eviction, before recording it: the terminating pod is not evicted again": {
			in: Input{
				Pods:     []Pod{pod("a", before, terminating), pod("b", before), pod("a2", after)},
				Progress: &Progress{Hash: "h2", Since: t0, Pending: []PodRef{ref("a"), ref("b")}}, Desired: 2, MaxUnavailable: 1,
			},
			want: Decision{
				Progress: &Progress{Hash: "h2", Since: t0, Pending: []PodRef{ref("b")}},
				Waiting:  "1 of 2 pods unavailable, at most 1 allowed; 1 pods still to evict",
			},
		},
		"a pod re-created under the same name counts as replaced": {
			in: Input{
				Pods:     []Pod{{Name: "web-0", UID: "new-uid", Created: after, Ready: true, Owned: true}},
				Progress: &Progress{Hash: "h2", Since: t0, Pending: []PodRef{ref("web-0")}}, Desired: 1, MaxUnavailable: 1,
			},
			want: Decision{Done: true},
		},
		"the replacement is Ready: evict the next": {
			in: Input{
				Pods:     []Pod{pod("b", before), pod("a2", after)},
				Progress: &Progress{Hash: "h2", Since: t0, Pending: []PodRef{ref("b")}}, Desired: 2, MaxUnavailable: 1,
			},
			want: Decision{Progress: &Progress{Hash: "h2", Since: t0, Pending: []PodRef{ref("b")}}, Evict: []PodRef{ref("b")}},
		},
		"max-unavailable 2 evicts two at once": {
			in: Input{
				Pods:     []Pod{pod("a", before), pod("b", before), pod("c", before)},
				Progress: &Progress{Hash: "h2", Since: t0, Pending: []PodRef{ref("a"), ref("b"), ref("c")}}, Desired: 3, MaxUnavailable: 2,
			},
			want: Decision{
				Progress: &Progress{Hash: "h2", Since: t0, Pending: []PodRef{ref("a"), ref("b"), ref("c")}},
				Evict:    []PodRef{ref("a"), ref("b")},
				Waiting:  "0 of 3 pods unavailable, at most 2 allowed; 1 pods still to evict",
			},
		},
		"a pending pod that is not Ready is evicted at once, first": {
			in: Input{
				Pods:     []Pod{pod("a", before), pod("b", before, notReady)},
				Progress: &Progress{Hash: "h2", Since: t0, Pending: []PodRef{ref("a"), ref("b")}}, Desired: 2, MaxUnavailable: 1,
			},
			want: Decision{
				Progress: &Progress{Hash: "h2", Since: t0, Pending: []PodRef{ref("a"), ref("b")}},
				Evict:    []PodRef{ref("b")},
				Waiting:  "1 of 2 pods unavailable, at most 1 allowed; 1 pods still to evict",
			},
		},
		"every pod evicted and the replacements Ready: done": {
			in: Input{
				Pods:     []Pod{pod("a2", after), pod("b2", after)},
				Progress: &Progress{Hash: "h2", Since: t0, Pending: []PodRef{ref("b")}}, Desired: 2, MaxUnavailable: 1,
			},
			want: Decision{Done: true},
		},
		"every pod evicted, the last replacement not Ready: wait": {
			in: Input{
				Pods:     []Pod{pod("a2", after), pod("b2", after, notReady)},
				Progress: &Progress{Hash: "h2", Since: t0}, Desired: 2, MaxUnavailable: 1,
			},
			want: Decision{Progress: &Progress{Hash: "h2", Since: t0}, Waiting: "waiting for 1 of 2 pods to be Ready"},
		},
		"a new change is folded in: pods replaced before it are evicted again, those after it not": {
			in: Input{
				Pods: []Pod{
					pod("b", before),                // still pending from the first change
					pod("a2", t0.Add(-time.Minute)), // replaced after the first change, before the second
					pod("c2", after, notReady),      // replaced after the second change
				},
				Progress: &Progress{Hash: "h1", Since: t0.Add(-2 * time.Minute), Pending: []PodRef{ref("b")}},
				Change:   change, Desired: 3, MaxUnavailable: 1,
			},
			want: Decision{
				Progress: &Progress{Hash: "h2", Since: t0, Pending: []PodRef{ref("a2"), ref("b")}},
				Started:  2,
				Waiting:  "1 of 3 pods unavailable, at most 1 allowed; 2 pods still to evict",
			},
		},
		"a block in progress is kept while the pod is pending": {
			in: Input{
				Pods:     []Pod{pod("a", before)},
				Progress: &Progress{Hash: "h2", Since: t0, Pending: []PodRef{ref("a")}, BlockedSince: &before}, Desired: 1, MaxUnavailable: 1,
			},
			want: Decision{Progress: &Progress{Hash: "h2", Since: t0, Pending: []PodRef{ref("a")}, BlockedSince: &before}, Evict: []PodRef{ref("a")}},
		},
		"unknown desired count: the pods seen count": {
			in: Input{
				Pods:     []Pod{pod("a", before), pod("b2", after, notReady)},
				Progress: &Progress{Hash: "h2", Since: t0, Pending: []PodRef{ref("a")}}, MaxUnavailable: 1,
			},
			want: Decision{
				Progress: &Progress{Hash: "h2", Since: t0, Pending: []PodRef{ref("a")}},
				Waiting:  "1 of 2 pods unavailable, at most 1 allowed; 1 pods still to evict",
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(Decide(tc.in)).To(Equal(tc.want))
		})
	}
}

func TestProgress_RoundTrip(t *testing.T) {
	g := NewWithT(t)
	blocked := t0.Add(1500 * time.Millisecond)
	p := &Progress{Hash: "h", Since: t0.Add(300 * time.Millisecond), Pending: []PodRef{ref("a")}, BlockedSince: &blocked}
	v := p.String()
	g.Expect(v).To(Equal(`{"hash":"h","since":"2026-11-22T12:00:00Z","pending":[{"name":"a","uid":"uid-a"}],"blockedSince":"2026-11-22T12:00:01Z"}`))
	back, err := ParseProgress(v)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(back.Since).To(BeTemporally("==", t0))
	g.Expect(back.Pending).To(Equal(p.Pending))
	g.Expect((*Progress)(nil).String()).To(BeEmpty())
}

func TestParseProgress(t *testing.T) {
	cases := map[string]struct {
		// value is the annotation's value.
		value string
		// wantNil is set when no record is expected.
		wantNil bool
		// wantErr is set when the value is damaged.
		wantErr bool
	}{
		"empty: no restart under way": {value: "", wantNil: true},
		"not JSON":                    {value: "{", wantNil: true, wantErr: true},
		"no hash":                     {value: `{"since":"2026-11-22T12:00:00Z"}`, wantNil: true, wantErr: true},
		"a record":                    {value: `{"hash":"h","since":"2026-11-22T12:00:00Z","pending":[]}`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			p, err := ParseProgress(tc.value)
			g.Expect(err != nil).To(Equal(tc.wantErr))
			g.Expect(p == nil).To(Equal(tc.wantNil))
		})
	}
}

func TestProgress_Without(t *testing.T) {
	g := NewWithT(t)
	p := &Progress{Hash: "h", Since: t0, Pending: []PodRef{ref("a"), ref("b")}, BlockedSince: &t0}
	g.Expect(p.Without("uid-a")).To(Equal(&Progress{Hash: "h", Since: t0, Pending: []PodRef{ref("b")}}))
	g.Expect(p.Without("uid-x")).To(Equal(p))
	g.Expect(p.Pending).To(HaveLen(2), "the original is unchanged")
}

func TestBudgetName(t *testing.T) {
	cases := map[string]struct {
		// budget is the API server's cause message.
		budget string
		// want is the name found.
		want string
	}{
		"needs healthy pods":    {budget: "The disruption budget web-pdb needs 2 healthy pods and has 2 currently", want: "web-pdb"},
		"still being processed": {budget: "The disruption budget web-pdb is still being processed by the server.", want: "web-pdb"},
		"something else":        {budget: "too many requests", want: ""},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			NewWithT(t).Expect(BudgetName(tc.budget)).To(Equal(tc.want))
		})
	}
}

func TestRetryDelay(t *testing.T) {
	cases := map[string]struct {
		// blocked is how long the eviction has been refused.
		blocked time.Duration
		// suggested is the API server's Retry-After.
		suggested time.Duration
		// want is the delay.
		want time.Duration
	}{
		"just blocked: 1 s":          {blocked: 0, want: time.Second},
		"blocked 5 s: 5 s":           {blocked: 5 * time.Second, want: 5 * time.Second},
		"blocked long: 30 s at most": {blocked: time.Hour, want: 30 * time.Second},
		"the server suggests 10 s":   {blocked: 0, suggested: 10 * time.Second, want: 10 * time.Second},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			NewWithT(t).Expect(RetryDelay(t0, t0.Add(tc.blocked), tc.suggested)).To(Equal(tc.want))
		})
	}
}
