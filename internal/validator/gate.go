package validator

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/lru"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rerollv1 "github.com/reroll/reroll/api/v1alpha1"
	"github.com/reroll/reroll/internal/metrics"
	"github.com/reroll/reroll/internal/plan"
	"github.com/reroll/reroll/internal/reference"
	"github.com/reroll/reroll/internal/validate"
)

// HoldInvalid is the hold reason (plan.PendingAnnotation) of a workload
// whose change's new content fails a Validator's rule: nothing rolls for
// it until the content changes again to content that passes.
const HoldInvalid = plan.HoldInvalid

// ReasonInvalidContent is the Warning Event on a ConfigMap or Secret whose
// new content fails a Validator's rule, and on each workload held for it;
// the note names the Validator, the rule and the key and says what is
// wrong, never quoting a Secret's value.
const ReasonInvalidContent = plan.ReasonInvalidContent

// verdictTTL is how long a verdict on one content is kept: a certificate's
// "not expiring within" moves with the clock.
const verdictTTL = time.Minute

// verdictCacheSize bounds the verdicts kept (one per object content).
const verdictCacheSize = 4096

// Gate checks the current content of ConfigMaps and Secrets against the
// Validators of their namespace (and, with Cluster, the ClusterValidators
// that select the namespace), for the workload reconciler and the content
// admission webhook. Verdicts are
// kept per content (object UID, resourceVersion and the Validators'
// generations), so a ConfigMap read by many workloads is read and checked
// once per change. Safe for concurrent use.
type Gate struct {
	// Reader lists Validators (the manager's cache).
	Reader client.Reader
	// APIReader reads a selected object's content (one GET per content).
	APIReader client.Reader
	// ResourceVersion returns the object's resourceVersion as Reroll's
	// store holds it, "" when unknown; it keys the verdicts so that a
	// known content costs no request. Nil: every check GETs.
	ResourceVersion func(ctx context.Context, kind reference.Kind, namespace, name string) string
	// Recorder records InvalidContent on the object.
	Recorder record.EventRecorder
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Cluster makes the Gate also apply the ClusterValidators whose
	// namespace selector matches the object's namespace's labels (read
	// through Reader). False when the API server serves no ClusterValidator
	// or Reroll may not list them.
	Cluster bool

	mu       sync.Mutex
	compiled map[types.UID]compiledValidator
	verdicts *lru.Cache

	once sync.Once
}

type compiledValidator struct {
	generation int64
	v          *validate.Validator // nil: does not compile
}

type verdict struct {
	at       time.Time
	findings []validate.Finding
}

func (g *Gate) init() {
	g.once.Do(func() {
		g.verdicts = lru.New(verdictCacheSize)
		g.compiled = map[types.UID]compiledValidator{}
	})
}

func (g *Gate) now() time.Time {
	if g.Now != nil {
		return g.Now()
	}
	return time.Now()
}

// Check returns the findings of the current content of the ConfigMap or
// Secret namespace/name against the Validators of its namespace that
// select it: none when it passes, is absent, or no Validator selects it.
// A Validator that does not compile is not used (its Ready condition says
// why). The first check of a failing content records InvalidContent on
// the object and counts it in the metric.
func (g *Gate) Check(ctx context.Context, kind reference.Kind, namespace, name string) ([]validate.Finding, error) {
	g.init()
	var okind rerollv1.ObjectKind
	switch kind {
	case reference.ConfigMap:
		okind = rerollv1.KindConfigMap
	case reference.Secret:
		okind = rerollv1.KindSecret
	default:
		return nil, nil
	}
	vs, fingerprint, err := g.validators(ctx, namespace, okind, name, nil)
	if err != nil || len(vs) == 0 {
		return nil, err
	}
	rv := ""
	if g.ResourceVersion != nil {
		rv = g.ResourceVersion(ctx, kind, namespace, name)
	}
	key := string(kind) + "/" + namespace + "/" + name + "@" + rv + "#" + fingerprint
	now := g.now()
	if rv != "" {
		g.mu.Lock()
		c, ok := g.verdicts.Get(key)
		g.mu.Unlock()
		if ok && now.Sub(c.(verdict).at) < verdictTTL {
			return c.(verdict).findings, nil
		}
	}
	var obj client.Object
	var content validate.Object
	switch okind {
	case rerollv1.KindConfigMap:
		cm := &corev1.ConfigMap{}
		err = g.APIReader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, cm)
		content, obj = validate.FromConfigMap(cm), cm
	default:
		s := &corev1.Secret{}
		err = g.APIReader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, s)
		content, obj = validate.FromSecret(s), s
	}
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s %s/%s to validate it: %w", kind, namespace, name, err)
	}
	findings := validate.Evaluate(ctx, vs, content, now)
	g.mu.Lock()
	prev, seen := g.verdicts.Get(key)
	g.verdicts.Add(key, verdict{at: now, findings: findings})
	g.mu.Unlock()
	if len(findings) > 0 && (!seen || !slices.Equal(prev.(verdict).findings, findings)) {
		metrics.InvalidContent(string(okind), namespace)
		if g.Recorder != nil {
			g.Recorder.Event(obj, corev1.EventTypeWarning, ReasonInvalidContent,
				fmt.Sprintf("%s/%s changed to content that fails validation: %s; no workload rolls for it", okind, name, validate.Summary(findings, 3)))
		}
	}
	return findings, nil
}

// Selects reports whether a Validator of namespace that compiles may
// check the ConfigMap or Secret name (it lists the name, or has a
// selector), without reading the object.
func (g *Gate) Selects(ctx context.Context, kind reference.Kind, namespace, name string) (bool, error) {
	g.init()
	okind := rerollv1.KindConfigMap
	if kind == reference.Secret {
		okind = rerollv1.KindSecret
	} else if kind != reference.ConfigMap {
		return false, nil
	}
	vs, _, err := g.validators(ctx, namespace, okind, name, nil)
	return len(vs) > 0, err
}

// validators returns the compiled Validators of namespace for kind that
// may select name (listed, or with a selector) and that keep (nil keeps
// all), and a fingerprint of them (UIDs and generations).
func (g *Gate) validators(ctx context.Context, namespace string, kind rerollv1.ObjectKind, name string, keep func(*validate.Validator) bool) ([]*validate.Validator, string, error) {
	var list rerollv1.ValidatorList
	if err := g.Reader.List(ctx, &list, client.InNamespace(namespace)); err != nil {
		return nil, "", fmt.Errorf("listing the Validators of namespace %s: %w", namespace, err)
	}
	sort.Slice(list.Items, func(i, j int) bool { return list.Items[i].Name < list.Items[j].Name })
	var clusterList rerollv1.ClusterValidatorList
	var nsLabels map[string]string
	if g.Cluster {
		if err := g.Reader.List(ctx, &clusterList); err != nil {
			return nil, "", fmt.Errorf("listing the ClusterValidators: %w", err)
		}
		sort.Slice(clusterList.Items, func(i, j int) bool { return clusterList.Items[i].Name < clusterList.Items[j].Name })
		if len(clusterList.Items) > 0 {
			ns := &corev1.Namespace{}
			if err := g.Reader.Get(ctx, client.ObjectKey{Name: namespace}, ns); err != nil {
				return nil, "", fmt.Errorf("reading namespace %s for the ClusterValidators' namespace selectors: %w", namespace, err)
			}
			nsLabels = ns.Labels
		}
	}
	var out []*validate.Validator
	var fp []string
	g.mu.Lock()
	defer g.mu.Unlock()
	add := func(uid types.UID, generation int64, spec *rerollv1.ValidatorSpec, compile func() (*validate.Validator, error)) {
		if spec.Kind != kind || (spec.Selector == nil && !slices.Contains(spec.Names, name)) {
			return
		}
		c, ok := g.compiled[uid]
		if !ok || c.generation != generation {
			cv, err := compile()
			if err != nil {
				cv = nil
			}
			c = compiledValidator{generation: generation, v: cv}
			g.compiled[uid] = c
		}
		if c.v != nil && c.v.SelectsNamespace(nsLabels) && (keep == nil || keep(c.v)) {
			out = append(out, c.v)
			fp = append(fp, string(uid)+":"+strconv.FormatInt(generation, 10))
		}
	}
	for i := range list.Items {
		v := &list.Items[i]
		add(v.UID, v.Generation, &v.Spec, func() (*validate.Validator, error) { return validate.Compile(v) })
	}
	for i := range clusterList.Items {
		cv := &clusterList.Items[i]
		add(cv.UID, cv.Generation, &cv.Spec.ValidatorSpec, func() (*validate.Validator, error) { return validate.CompileCluster(cv) })
	}
	return out, strings.Join(fp, ","), nil
}

// forget drops the compiled copy of a deleted Validator.
func (g *Gate) forget(uid types.UID) {
	g.init()
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.compiled, uid)
}
