package plan

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/reroll/reroll/internal/annotation"
	"github.com/reroll/reroll/internal/digest"
	"github.com/reroll/reroll/internal/reference"
	"github.com/reroll/reroll/internal/trigger"
	"github.com/reroll/reroll/internal/workload"
)

// memory is a Source held in a map keyed "Kind/namespace/name".
type memory map[string]Object

func (m memory) Object(kind reference.Kind, namespace, name string) (Object, bool, error) {
	o, ok := m[string(kind)+"/"+namespace+"/"+name]
	if ok && o.UID == "unreadable" {
		return Object{}, false, fmt.Errorf("secrets is forbidden: %w", ErrUnreadable)
	}
	return o, ok, nil
}

func (m memory) Names(kind reference.Kind, namespace string) ([]string, error) {
	var out []string
	for k := range m {
		if rest, ok := strings.CutPrefix(k, string(kind)+"/"+namespace+"/"); ok {
			out = append(out, rest)
		}
	}
	return out, nil
}

// obj builds what a cache holds of an object with data and annotations;
// rv is its resourceVersion.
func obj(data map[string]string, annotations map[string]string, rv string) Object {
	d := digest.Data{Keys: map[string]string{}}
	raw := map[string][]byte{}
	for k, v := range data {
		d.Keys[k] = digest.Value([]byte(v))
		raw[k] = []byte(v)
	}
	d.ReloaderSHA1 = digest.ReloaderSHA1OfSecret(raw)
	return Object{Annotations: annotations, Data: d, UID: "uid-1", ResourceVersion: rv}
}

func cm(name string) string     { return "ConfigMap/ns/" + name }
func secret(name string) string { return "Secret/ns/" + name }

// template returns a pod template whose container "app" reads the
// ConfigMaps named through envFrom, plus the given env vars.
func template(envFrom []string, env ...corev1.EnvVar) *corev1.PodTemplateSpec {
	c := corev1.Container{Name: "app", Env: env}
	for _, n := range envFrom {
		c.EnvFrom = append(c.EnvFrom, corev1.EnvFromSource{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: n}}})
	}
	return &corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{c}}}
}

// secretKey is an env var reading one key of a Secret.
func secretKey(name, key string) corev1.EnvVar {
	return corev1.EnvVar{Name: "E_" + key, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: key}}}
}

var now = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)

func defaults() Options { return DefaultOptions() }

func TestDecide(t *testing.T) {
	auto := map[string]string{"reroll.dev/auto": "true"}
	reloaderAuto := map[string]string{"reloader.stakater.com/auto": "true"}
	cases := map[string]struct {
		opts        func(*Options)          // changes to the default options
		annotations map[string]string       // the workload's metadata annotations
		template    *corev1.PodTemplateSpec // its pod template; template([cfg]) when nil
		action      workload.Action         // how its kind rolls; ByTemplate when zero
		reloaderAct workload.Action         // how it rolls in Reloader's dialect; action when zero
		before      memory                  // the objects when Reroll recorded; nil: no record yet
		record      string                  // the record, instead of one made from before
		extra       map[string]string       // more workload annotations, added after the record
		after       memory                  // the objects now
		want        Outcome                 // the plan's outcome
		changes     string                  // the change's summary ("" for none)
		check       func(*testing.T, Plan)  // further checks; may be nil
	}{
		"first sight records without rolling": {
			annotations: auto,
			after:       memory{cm("cfg"): obj(map[string]string{"a": "1"}, nil, "1")},
			want:        FirstSight,
			check: func(t *testing.T, p Plan) {
				if p.Annotations[RecordAnnotation] != `{"ConfigMap/cfg":{"a":"6b86b273ff34fce1"}}` {
					t.Errorf("record = %s", p.Annotations[RecordAnnotation])
				}
				if len(p.Events) != 0 || p.Alert != nil {
					t.Errorf("first sight tells nothing: %+v", p.Events)
				}
			},
		},
		"a damaged record is replaced without a rollout": {
			annotations: auto,
			record:      `{"ConfigMap/cfg":`,
			after:       memory{cm("cfg"): obj(map[string]string{"a": "2"}, nil, "2")},
			want:        DamagedRecord,
			check: func(t *testing.T, p Plan) {
				if len(p.Warnings) != 1 || !strings.Contains(p.Warnings[0].Note, "recording the current state without a rollout") {
					t.Errorf("warnings = %+v", p.Warnings)
				}
				if p.Annotations[RecordAnnotation] != p.Record.String() {
					t.Errorf("the record is not replaced")
				}
			},
		},
		"Reroll's dialect: a consumed key changed sets the config hash": {
			annotations: auto,
			before:      memory{cm("cfg"): obj(map[string]string{"a": "1", "b": "1"}, nil, "1")},
			after:       memory{cm("cfg"): obj(map[string]string{"a": "2", "b": "1"}, nil, "2")},
			want:        Roll,
			changes:     "ConfigMap/cfg changed keys a",
			check: func(t *testing.T, p Plan) {
				tr := p.Roll.Trigger
				// The SHA-256 of the record, computed outside Go:
				// printf '%s' '{"ConfigMap/cfg":{"a":"d4735e3a265e16ee","b":"6b86b273ff34fce1"}}' | sha256sum
				// (the digests: `printf 2 | sha256sum`, `printf 1 | sha256sum`, 16 hex characters each).
				const want = "9f9904c1cddeaf276110015b62f2b11c8dadd9912c7e3c0ca06f251d4273d59d"
				if p.Roll.Way != workload.ByTemplate || tr.Annotation != trigger.ConfigHashAnnotation || tr.Value != want {
					t.Errorf("roll = %+v", p.Roll)
				}
				if len(p.Events) != 1 || p.Events[0].Note != "Rolled after ConfigMap/cfg changed keys a" {
					t.Errorf("events = %+v", p.Events)
				}
				if p.Alert == nil || p.Alert.Summary() != "ConfigMap/cfg changed keys a" || p.Alert.Objects[0].Hash != "" {
					t.Errorf("alert = %+v, want the change without hashes", p.Alert)
				}
			},
		},
		"restart by eviction: the plan rolls ByEviction, with no template trigger": {
			annotations: auto,
			action:      workload.Action{Way: workload.ByEviction},
			before:      memory{cm("cfg"): obj(map[string]string{"a": "1"}, nil, "1")},
			after:       memory{cm("cfg"): obj(map[string]string{"a": "2"}, nil, "2")},
			want:        Roll,
			changes:     "ConfigMap/cfg changed keys a",
			check: func(t *testing.T, p Plan) {
				if p.Roll.Way != workload.ByEviction || p.Roll.Trigger.Annotation != "" {
					t.Errorf("roll = %+v", p.Roll)
				}
				if len(p.Events) != 1 || !strings.HasPrefix(p.Events[0].Note, "Rolled after ConfigMap/cfg changed keys a: evicting its pods") {
					t.Errorf("events = %+v", p.Events)
				}
			},
		},
		"restart by eviction while it is off: nothing restarts, and a Warning names the flag": {
			opts:        func(o *Options) { o.NoEviction = true },
			annotations: auto,
			action:      workload.Action{Way: workload.ByEviction},
			before:      memory{cm("cfg"): obj(map[string]string{"a": "1"}, nil, "1")},
			after:       memory{cm("cfg"): obj(map[string]string{"a": "2"}, nil, "2")},
			want:        NotRolled,
			changes:     "ConfigMap/cfg changed keys a",
			check: func(t *testing.T, p Plan) {
				if len(p.Events) != 1 || p.Events[0].Type != corev1.EventTypeWarning || p.Events[0].Reason != "EvictionDisabled" ||
					!strings.Contains(p.Events[0].Note, "--enable-pod-eviction") {
					t.Errorf("events = %+v", p.Events)
				}
				if p.Annotations[RecordAnnotation] == "" {
					t.Error("the record is not written")
				}
			},
		},
		"restart by eviction while it is off: first sight records and warns at once": {
			opts:        func(o *Options) { o.NoEviction = true },
			annotations: auto,
			action:      workload.Action{Way: workload.ByEviction},
			after:       memory{cm("cfg"): obj(map[string]string{"a": "1"}, nil, "1")},
			want:        FirstSight,
			check: func(t *testing.T, p Plan) {
				if len(p.Warnings) != 1 || p.Warnings[0].Type != corev1.EventTypeWarning || p.Warnings[0].Reason != "EvictionDisabled" ||
					!strings.Contains(p.Warnings[0].Note, "--enable-pod-eviction") {
					t.Errorf("warnings = %+v", p.Warnings)
				}
			},
		},
		"restart by eviction while it is on: first sight warns of nothing": {
			annotations: auto,
			action:      workload.Action{Way: workload.ByEviction},
			after:       memory{cm("cfg"): obj(map[string]string{"a": "1"}, nil, "1")},
			want:        FirstSight,
			check: func(t *testing.T, p Plan) {
				if len(p.Warnings) != 0 || len(p.Events) != 0 {
					t.Errorf("warnings = %+v, events = %+v", p.Warnings, p.Events)
				}
			},
		},
		"a change to a key the template does not read rolls nothing": {
			annotations: auto,
			template:    template(nil, secretKey("db", "password")),
			before:      memory{secret("db"): obj(map[string]string{"password": "p", "user": "u"}, nil, "1")},
			after:       memory{secret("db"): obj(map[string]string{"password": "p", "user": "v"}, nil, "2")},
			want:        Unchanged,
		},
		"envFrom: a key added rolls": {
			annotations: auto,
			before:      memory{cm("cfg"): obj(map[string]string{"a": "1"}, nil, "1")},
			after:       memory{cm("cfg"): obj(map[string]string{"a": "1", "new": "x"}, nil, "2")},
			want:        Roll,
			changes:     "ConfigMap/cfg changed keys new",
		},
		"envFrom: a key removed rolls": {
			annotations: auto,
			before:      memory{cm("cfg"): obj(map[string]string{"a": "1", "old": "x"}, nil, "1")},
			after:       memory{cm("cfg"): obj(map[string]string{"a": "1"}, nil, "2")},
			want:        Roll,
			changes:     "ConfigMap/cfg changed keys old",
		},
		"Reloader's dialect writes last-reloaded-from for the last object in name order": {
			annotations: reloaderAuto,
			template:    template([]string{"a-cfg", "b-cfg"}),
			before:      memory{cm("a-cfg"): obj(map[string]string{"k": "1"}, nil, "1"), cm("b-cfg"): obj(map[string]string{"k": "1"}, nil, "1")},
			after:       memory{cm("a-cfg"): obj(map[string]string{"k": "2"}, nil, "2"), cm("b-cfg"): obj(map[string]string{"k": "2"}, nil, "2")},
			want:        Roll,
			changes:     "ConfigMap/a-cfg changed keys k; ConfigMap/b-cfg changed keys k",
			check: func(t *testing.T, p Plan) {
				rf := p.Roll.Trigger.ReloadedFrom
				if rf == nil || rf.Name != "b-cfg" || rf.Type != "CONFIGMAP" || rf.Namespace != "ns" || rf.ObservedAt != now.Unix() || rf.Hash != digest.ReloaderSHA1OfSecret(map[string][]byte{"k": []byte("2")}) {
					t.Errorf("last-reloaded-from = %+v", rf)
				}
			},
		},
		"env-vars strategy: one STAKATER_ variable per changed object": {
			opts:        func(o *Options) { o.Strategy = trigger.EnvVars },
			annotations: auto,
			before:      memory{cm("cfg"): obj(map[string]string{"a": "1"}, nil, "1")},
			after:       memory{cm("cfg"): obj(map[string]string{"a": "2"}, nil, "2")},
			want:        Roll,
			changes:     "ConfigMap/cfg changed keys a",
			check: func(t *testing.T, p Plan) {
				env := p.Roll.Trigger.Env
				if len(env) != 1 || env[0].Name != "STAKATER_CFG_CONFIGMAP" || env[0].Value != digest.ReloaderSHA1OfSecret(map[string][]byte{"a": []byte("2")}) {
					t.Errorf("env = %+v", env)
				}
				tmpl := template([]string{"cfg"})
				if err := p.Roll.Trigger.Set(tmpl); err != nil || len(tmpl.Spec.Containers[0].Env) != 1 {
					t.Errorf("Set: %v, env %+v", err, tmpl.Spec.Containers[0].Env)
				}
			},
		},
		"pod-reloader's dialect: any write counts and the text says so": {
			annotations: map[string]string{"pod-reloader.cs.sap.com/configmaps": "cfg"},
			before:      memory{cm("cfg"): obj(map[string]string{"a": "1"}, nil, "1")},
			after:       memory{cm("cfg"): obj(map[string]string{"a": "1"}, map[string]string{"touched": "yes"}, "2")},
			want:        Roll,
			changes:     "ConfigMap/cfg was written",
			check: func(t *testing.T, p Plan) {
				want := digest.PodReloaderHash([]digest.PodReloaderEntry{{Kind: "configmap", Namespace: "ns", Name: "cfg", Exists: true, UID: "uid-1", ResourceVersion: "2"}})
				if tr := p.Roll.Trigger; tr.Annotation != trigger.PodReloaderHashAnnotation || tr.Value != want {
					t.Errorf("trigger = %+v, want pod-reloader's hash %s", tr, want)
				}
				if !p.Alert.Objects[0].Written || p.Alert.Objects[0].Keys != nil {
					t.Errorf("alert object = %+v, want written without keys", p.Alert.Objects[0])
				}
			},
		},
		"Wave's dialect: the hash is deferred to the apply step": {
			annotations: map[string]string{annotation.WaveUpdate: "true"},
			before:      memory{cm("cfg"): obj(map[string]string{"a": "1"}, nil, "1")},
			after:       memory{cm("cfg"): obj(map[string]string{"a": "2"}, nil, "2")},
			want:        Roll,
			changes:     "ConfigMap/cfg changed keys a",
			check: func(t *testing.T, p Plan) {
				tr := p.Roll.Trigger
				if tr.Annotation != trigger.WaveHashAnnotation || tr.Deferred != DeferredWaveHash || len(tr.Wave) != 1 || tr.Namespace != "ns" {
					t.Errorf("trigger = %+v", tr)
				}
			},
		},
		"Wave's dialect with an Argo Rollout workloadRef: the Deployment's template gets the deferred hash, never empty": {
			annotations: map[string]string{annotation.WaveUpdate: "true"},
			action:      workload.Action{Way: workload.ByWorkloadRef, Ref: "target"},
			before:      memory{cm("cfg"): obj(map[string]string{"a": "1"}, nil, "1")},
			after:       memory{cm("cfg"): obj(map[string]string{"a": "2"}, nil, "2")},
			want:        Roll,
			changes:     "ConfigMap/cfg changed keys a",
			check: func(t *testing.T, p Plan) {
				if p.Roll.Way != workload.ByWorkloadRef || p.Roll.Target != "target" || p.Roll.Trigger.Deferred != DeferredWaveHash {
					t.Fatalf("roll = %+v", p.Roll)
				}
				tmpl := template([]string{"cfg"})
				if err := p.Roll.Trigger.Set(tmpl); !errors.Is(err, ErrDeferred) || tmpl.Annotations != nil {
					t.Errorf("Set before the hash is computed: %v, annotations %v; want ErrDeferred and no change", err, tmpl.Annotations)
				}
				tr := p.Roll.Trigger
				tr.Value = "computed"
				if err := tr.Set(tmpl); err != nil || tmpl.Annotations[trigger.WaveHashAnnotation] != "computed" {
					t.Errorf("Set after: %v, %v", err, tmpl.Annotations)
				}
			},
		},
		"Wave's dialect waits while a required object is missing": {
			annotations: map[string]string{annotation.WaveUpdate: "true"},
			template:    template([]string{"cfg", "not-yet"}),
			after:       memory{cm("cfg"): obj(map[string]string{"a": "1"}, nil, "1")},
			want:        Waiting,
			check: func(t *testing.T, p Plan) {
				if len(p.Missing) != 1 || p.Missing[0] != "ConfigMap/not-yet" || len(p.Annotations) != 0 {
					t.Errorf("missing = %v, annotations %v; want one missing and nothing written", p.Missing, p.Annotations)
				}
			},
		},
		"an exclude list beats auto": {
			annotations: map[string]string{"reloader.stakater.com/auto": "true", annotation.ReloaderExcludeConfigMaps: "cfg"},
			before:      memory{cm("cfg"): obj(map[string]string{"a": "1"}, nil, "1")},
			after:       memory{cm("cfg"): obj(map[string]string{"a": "2"}, nil, "2")},
			want:        Unchanged,
			check:       ruleOf("ConfigMap/cfg", false, RuleExcluded),
		},
		"the object's ignore annotation beats an explicit list": {
			annotations: map[string]string{"reroll.dev/configmaps": "cfg"},
			before:      memory{cm("cfg"): obj(map[string]string{"a": "1"}, map[string]string{"reroll.dev/ignore": "true"}, "1")},
			after:       memory{cm("cfg"): obj(map[string]string{"a": "2"}, map[string]string{"reroll.dev/ignore": "true"}, "2")},
			want:        Unchanged,
			check:       ruleOf("ConfigMap/cfg", false, RuleIgnoreAnnotation),
		},
		"a key-level reference reads only its keys": {
			annotations: auto,
			template:    template(nil, secretKey("db", "password")),
			after:       memory{secret("db"): obj(map[string]string{"password": "p", "user": "u"}, nil, "1")},
			want:        FirstSight,
			check: func(t *testing.T, p Plan) {
				c := p.Considered[0]
				if !c.Reads("password") || c.Reads("user") {
					t.Errorf("Reads: password %v, user %v; want true, false", c.Reads("password"), c.Reads("user"))
				}
			},
		},
		"an explicit list selects an object the template does not read": {
			annotations: map[string]string{"reroll.dev/configmaps": "listed"},
			template:    template(nil),
			before:      memory{cm("listed"): obj(map[string]string{"a": "1"}, nil, "1")},
			after:       memory{cm("listed"): obj(map[string]string{"a": "2"}, nil, "2")},
			want:        Roll,
			changes:     "ConfigMap/listed changed keys a",
			check:       ruleOf("ConfigMap/listed", true, RuleListed),
		},
		"an object both read and listed is considered once": {
			annotations: map[string]string{"reroll.dev/configmaps": "cfg,listed"},
			before:      memory{cm("cfg"): obj(map[string]string{"a": "1"}, nil, "1"), cm("listed"): obj(map[string]string{"a": "1"}, nil, "1")},
			after:       memory{cm("cfg"): obj(map[string]string{"a": "2"}, nil, "2"), cm("listed"): obj(map[string]string{"a": "1"}, nil, "1")},
			want:        Roll,
			changes:     "ConfigMap/cfg changed keys a",
			check: func(t *testing.T, p Plan) {
				// The template's reference comes first and stands for both.
				var ids []string
				for _, c := range p.Considered {
					ids = append(ids, c.Ref.ID())
				}
				if strings.Join(ids, " ") != "ConfigMap/cfg ConfigMap/listed" || len(p.References) != 2 {
					t.Errorf("considered %v, references %+v; want ConfigMap/cfg and ConfigMap/listed once each", ids, p.References)
				}
			},
		},
		"a Reloader list pattern matches objects by name": {
			annotations: map[string]string{"configmap.reloader.stakater.com/reload": "app-.*"},
			template:    template(nil),
			before:      memory{cm("app-one"): obj(map[string]string{"a": "1"}, nil, "1"), cm("other"): obj(map[string]string{"a": "1"}, nil, "1")},
			after:       memory{cm("app-one"): obj(map[string]string{"a": "2"}, nil, "2"), cm("other"): obj(map[string]string{"a": "2"}, nil, "2")},
			want:        Roll,
			changes:     "ConfigMap/app-one changed keys a",
		},
		"search selects an object with match": {
			annotations: map[string]string{"reloader.stakater.com/search": "true"},
			before:      memory{cm("cfg"): obj(map[string]string{"a": "1"}, map[string]string{"reloader.stakater.com/match": "true"}, "1")},
			after:       memory{cm("cfg"): obj(map[string]string{"a": "2"}, map[string]string{"reloader.stakater.com/match": "true"}, "2")},
			want:        Roll,
			changes:     "ConfigMap/cfg changed keys a",
			check:       ruleOf("ConfigMap/cfg", true, RuleSearchMatch),
		},
		"search skips an object without match": {
			annotations: map[string]string{"reloader.stakater.com/search": "true"},
			before:      memory{cm("cfg"): obj(map[string]string{"a": "1"}, nil, "1")},
			after:       memory{cm("cfg"): obj(map[string]string{"a": "2"}, nil, "2")},
			want:        Unchanged,
			check:       ruleOf("ConfigMap/cfg", false, RuleNoMatch),
		},
		"typed auto selects its kind only": {
			annotations: map[string]string{"configmap.reloader.stakater.com/auto": "true"},
			template:    template([]string{"cfg"}, secretKey("db", "k")),
			before:      memory{cm("cfg"): obj(map[string]string{"a": "1"}, nil, "1"), secret("db"): obj(map[string]string{"k": "1"}, nil, "1")},
			after:       memory{cm("cfg"): obj(map[string]string{"a": "1"}, nil, "1"), secret("db"): obj(map[string]string{"k": "2"}, nil, "2")},
			want:        Unchanged,
			check:       ruleOf("Secret/db", false, RuleNotOptedIn),
		},
		"--resources-to-ignore drops a kind": {
			opts:        func(o *Options) { o.Annotations.IgnoreSecrets = true },
			annotations: auto,
			template:    template(nil, secretKey("db", "k")),
			before:      memory{secret("db"): obj(map[string]string{"k": "1"}, nil, "1")},
			after:       memory{secret("db"): obj(map[string]string{"k": "2"}, nil, "2")},
			want:        Unchanged,
			check:       ruleOf("Secret/db", false, RuleIgnoredKind),
		},
		"the pod template's opt-in counts when the metadata has none": {
			template: func() *corev1.PodTemplateSpec {
				t := template([]string{"cfg"})
				t.Annotations = map[string]string{"reloader.stakater.com/auto": "true"}
				return t
			}(),
			before:  memory{cm("cfg"): obj(map[string]string{"a": "1"}, nil, "1")},
			after:   memory{cm("cfg"): obj(map[string]string{"a": "2"}, nil, "2")},
			want:    Roll,
			changes: "ConfigMap/cfg changed keys a",
		},
		"Reroll's dialect wins over Reloader's": {
			annotations: map[string]string{"reroll.dev/auto": "true", "reloader.stakater.com/auto": "true"},
			before:      memory{cm("cfg"): obj(map[string]string{"a": "1"}, nil, "1")},
			after:       memory{cm("cfg"): obj(map[string]string{"a": "2"}, nil, "2")},
			want:        Roll,
			changes:     "ConfigMap/cfg changed keys a",
			check: func(t *testing.T, p Plan) {
				if p.OptIn.Dialect != annotation.DialectReroll || p.Roll.Trigger.Annotation != trigger.ConfigHashAnnotation {
					t.Errorf("dialect %s, trigger %+v", p.OptIn.Dialect, p.Roll.Trigger)
				}
			},
		},
		"a malformed annotation warns and the rest applies": {
			annotations: map[string]string{"reroll.dev/auto": "true", "reroll.dev/search": "sometimes"},
			before:      memory{cm("cfg"): obj(map[string]string{"a": "1"}, nil, "1")},
			after:       memory{cm("cfg"): obj(map[string]string{"a": "2"}, nil, "2")},
			want:        Roll,
			changes:     "ConfigMap/cfg changed keys a",
			check: func(t *testing.T, p Plan) {
				if len(p.Warnings) != 1 || p.Warnings[0].Reason != ReasonInvalidAnnotation {
					t.Errorf("warnings = %+v", p.Warnings)
				}
			},
		},
		"opting out removes the record and the managed label": {
			opts:        func(o *Options) { o.Managed = true },
			annotations: nil,
			extra:       map[string]string{RecordAnnotation: `{"ConfigMap/cfg":{}}`},
			after:       memory{cm("cfg"): obj(map[string]string{"a": "2"}, nil, "2")},
			want:        NotOptedIn,
			check: func(t *testing.T, p Plan) {
				if v, ok := p.Annotations[RecordAnnotation]; !ok || v != "" {
					t.Errorf("record not removed: %v", p.Annotations)
				}
				if v, ok := p.Labels[ManagedLabel]; !ok || v != "" {
					t.Errorf("label not removed: %v", p.Labels)
				}
			},
		},
		"a created object does not roll without --reload-on-create": {
			annotations: auto,
			before:      memory{},
			after:       memory{cm("cfg"): obj(map[string]string{"a": "1"}, nil, "1")},
			want:        Skipped,
			check: func(t *testing.T, p Plan) {
				if len(p.HeldBy) != 1 || p.HeldBy[0] != "--reload-on-create" {
					t.Errorf("held by %v", p.HeldBy)
				}
			},
		},
		"a created object rolls with --reload-on-create": {
			opts:        func(o *Options) { o.ReloadOnCreate = true },
			annotations: auto,
			before:      memory{},
			after:       memory{cm("cfg"): obj(map[string]string{"a": "1"}, nil, "1")},
			want:        Roll,
			changes:     "ConfigMap/cfg was created",
		},
		"a deleted object does not roll without --reload-on-delete": {
			annotations: auto,
			before:      memory{cm("cfg"): obj(map[string]string{"a": "1"}, nil, "1")},
			after:       memory{},
			want:        Skipped,
		},
		"a deleted object rolls with --reload-on-delete": {
			opts:        func(o *Options) { o.ReloadOnDelete = true },
			annotations: auto,
			before:      memory{cm("cfg"): obj(map[string]string{"a": "1"}, nil, "1")},
			after:       memory{},
			want:        Roll,
			changes:     "ConfigMap/cfg was deleted",
		},
		"a rollout with a pause period pauses the Deployment": {
			annotations: map[string]string{"reroll.dev/auto": "true", "reroll.dev/pause-period": "5m"},
			before:      memory{cm("cfg"): obj(map[string]string{"a": "1"}, nil, "1")},
			after:       memory{cm("cfg"): obj(map[string]string{"a": "2"}, nil, "2")},
			want:        Roll,
			changes:     "ConfigMap/cfg changed keys a",
			check: func(t *testing.T, p Plan) {
				if !p.Pause.Pause || p.Pause.RequeueAfter != 5*time.Minute || p.Annotations["deployment.reloader.stakater.com/paused-at"] != now.Format(time.RFC3339) {
					t.Errorf("pause = %+v, annotations %v", p.Pause, p.Annotations)
				}
				if last := p.Events[len(p.Events)-1]; last.Reason != ReasonPaused {
					t.Errorf("events = %+v, want Paused after Rolled", p.Events)
				}
			},
		},
		"a running pause waits for its end": {
			annotations: map[string]string{"reroll.dev/auto": "true", "reroll.dev/pause-period": "5m"},
			extra:       map[string]string{"deployment.reloader.stakater.com/paused-at": now.Add(-time.Minute).Format(time.RFC3339)},
			before:      memory{cm("cfg"): obj(map[string]string{"a": "1"}, nil, "1")},
			after:       memory{cm("cfg"): obj(map[string]string{"a": "1"}, nil, "1")},
			want:        Unchanged,
			check: func(t *testing.T, p Plan) {
				if p.Pause.Resume || p.Pause.RequeueAfter != 4*time.Minute {
					t.Errorf("pause = %+v", p.Pause)
				}
			},
		},
		"a pause whose period passed resumes": {
			annotations: map[string]string{"reroll.dev/auto": "true", "reroll.dev/pause-period": "5m"},
			extra:       map[string]string{"deployment.reloader.stakater.com/paused-at": now.Add(-time.Hour).Format(time.RFC3339)},
			before:      memory{cm("cfg"): obj(map[string]string{"a": "1"}, nil, "1")},
			after:       memory{cm("cfg"): obj(map[string]string{"a": "1"}, nil, "1")},
			want:        Unchanged,
			check: func(t *testing.T, p Plan) {
				if v, ok := p.Annotations["deployment.reloader.stakater.com/paused-at"]; !p.Pause.Resume || !ok || v != "" {
					t.Errorf("pause = %+v, annotations %v", p.Pause, p.Annotations)
				}
			},
		},
		"a CronJob without the job trigger records and does not restart": {
			annotations: auto,
			action:      workload.CronJob{}.Action(cronJob(nil), false),
			before:      memory{cm("cfg"): obj(map[string]string{"a": "1"}, nil, "1")},
			after:       memory{cm("cfg"): obj(map[string]string{"a": "2"}, nil, "2")},
			want:        NotRolled,
			changes:     "ConfigMap/cfg changed keys a",
			check: func(t *testing.T, p Plan) {
				if len(p.Events) != 1 || p.Events[0].Reason != ReasonNotRolled || !strings.Contains(p.Events[0].Note, "next scheduled Job") || p.Alert != nil {
					t.Errorf("events = %+v, alert %v", p.Events, p.Alert)
				}
			},
		},
		"a CronJob opted in with Reloader's annotations creates a Job, as Reloader does": {
			annotations: reloaderAuto,
			action:      workload.CronJob{}.Action(cronJob(nil), false),
			reloaderAct: workload.CronJob{}.Action(cronJob(nil), true),
			before:      memory{cm("cfg"): obj(map[string]string{"a": "1"}, nil, "1")},
			after:       memory{cm("cfg"): obj(map[string]string{"a": "2"}, nil, "2")},
			want:        Roll,
			changes:     "ConfigMap/cfg changed keys a",
			check: func(t *testing.T, p Plan) {
				if p.Roll.Way != workload.ByJob {
					t.Errorf("way = %s, want %s", p.Roll.Way, workload.ByJob)
				}
			},
		},
		"a CronJob opted in with Reroll's annotations keeps the quiet default": {
			annotations: auto,
			action:      workload.CronJob{}.Action(cronJob(nil), false),
			reloaderAct: workload.CronJob{}.Action(cronJob(nil), true),
			before:      memory{cm("cfg"): obj(map[string]string{"a": "1"}, nil, "1")},
			after:       memory{cm("cfg"): obj(map[string]string{"a": "2"}, nil, "2")},
			want:        NotRolled,
			changes:     "ConfigMap/cfg changed keys a",
		},
		"a CronJob with the job trigger creates a Job named after the data": {
			annotations: auto,
			action:      workload.CronJob{}.Action(cronJob(map[string]string{workload.CronJobTriggerAnnotation: "job"}), false),
			before:      memory{cm("cfg"): obj(map[string]string{"a": "1"}, nil, "1")},
			after:       memory{cm("cfg"): obj(map[string]string{"a": "2"}, nil, "2")},
			want:        Roll,
			changes:     "ConfigMap/cfg changed keys a",
			check: func(t *testing.T, p Plan) {
				// "web-reroll-" and the first 8 hex characters of the record's
				// SHA-256, computed outside Go:
				// printf '%s' '{"ConfigMap/cfg":{"a":"d4735e3a265e16ee"}}' | sha256sum
				if p.Roll.Way != workload.ByJob || p.Roll.Job != "web-reroll-a5b569af" {
					t.Errorf("roll = %+v", p.Roll)
				}
			},
		},
		"--webhook-url notifies instead of rolling, hashes only in the notification": {
			opts:        func(o *Options) { o.WebhookURL = "https://user:pw@hooks.example/T0/secret-token" },
			annotations: auto,
			before:      memory{cm("cfg"): obj(map[string]string{"a": "1"}, nil, "1")},
			after:       memory{cm("cfg"): obj(map[string]string{"a": "2"}, nil, "2")},
			want:        Notify,
			changes:     "ConfigMap/cfg changed keys a",
			check: func(t *testing.T, p Plan) {
				n := p.Notification
				// printf '%s' '{"ConfigMap/cfg":{"a":"d4735e3a265e16ee"}}' | sha256sum
				const want = "a5b569afeb0a234632db77fa505f592d55c24a2fbeab10fe24bd752bc902a6eb"
				if n == nil || n.Hash != want || n.ObservedAt != now.Unix() || n.Objects[0].Hash == "" {
					t.Errorf("notification = %+v", n)
				}
				if p.Alert != nil || p.Roll.Way != "" {
					t.Errorf("a notification neither rolls nor alerts: %+v %+v", p.Roll, p.Alert)
				}
				if len(p.Events) != 1 || p.Events[0].Note != "Notified https://hooks.example/... after ConfigMap/cfg changed keys a" {
					t.Errorf("events = %+v, want the redacted endpoint", p.Events)
				}
			},
		},
		"an unreadable object counts as unchanged and is named": {
			annotations: auto,
			template:    template([]string{"cfg"}, secretKey("db", "k")),
			before:      memory{cm("cfg"): obj(map[string]string{"a": "1"}, nil, "1"), secret("db"): obj(map[string]string{"k": "1"}, nil, "1")},
			after:       memory{cm("cfg"): obj(map[string]string{"a": "2"}, nil, "2"), secret("db"): {UID: "unreadable"}},
			want:        Roll,
			changes:     "ConfigMap/cfg changed keys a",
			check: func(t *testing.T, p Plan) {
				if len(p.Unreadable) != 1 || p.Unreadable[0] != "Secret/db" {
					t.Errorf("unreadable = %v", p.Unreadable)
				}
			},
		},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			o := defaults()
			if c.opts != nil {
				c.opts(&o)
			}
			in := Input{Kind: "Deployment", Namespace: "ns", Name: "web", UID: "u", Annotations: map[string]string{},
				Template: c.template, Action: c.action, ReloaderAction: c.reloaderAct, Pausable: true, Now: now}
			if in.Template == nil {
				in.Template = template([]string{"cfg"})
			}
			if in.Action.Way == "" {
				in.Action.Way = workload.ByTemplate
			}
			for k, v := range c.annotations {
				in.Annotations[k] = v
			}
			switch {
			case c.record != "":
				in.Annotations[RecordAnnotation] = c.record
			case c.before != nil:
				first, err := DecideChange(o, in, c.before)
				if err != nil || first.Outcome != FirstSight {
					t.Fatalf("recording: %v, outcome %s", err, first.Outcome)
				}
				in.Annotations[RecordAnnotation] = first.Record.String()
			}
			for k, v := range c.extra {
				in.Annotations[k] = v
			}
			p, err := DecideChange(o, in, c.after)
			if err != nil {
				t.Fatal(err)
			}
			if p.Outcome != c.want {
				t.Errorf("outcome = %s, want %s (changes %q)", p.Outcome, c.want, p.Change.Summary())
			}
			if got := p.Change.Summary(); got != c.changes {
				t.Errorf("changes = %q, want %q", got, c.changes)
			}
			if c.check != nil {
				c.check(t, p)
			}
		})
	}
}

// ruleOf checks that the plan considered the object with id, selected or
// not, for rule.
func ruleOf(id string, selected bool, rule Rule) func(*testing.T, Plan) {
	return func(t *testing.T, p Plan) {
		t.Helper()
		for _, c := range p.Considered {
			if c.Ref.ID() == id {
				if c.Selected != selected || c.Rule != rule {
					t.Errorf("%s: selected %v for %q, want %v for %q", id, c.Selected, c.Rule, selected, rule)
				}
				return
			}
		}
		t.Errorf("%s was not considered: %+v", id, p.Considered)
	}
}

func TestDecide_Deleting(t *testing.T) {
	in := Input{Kind: "Deployment", Namespace: "ns", Name: "web", Annotations: map[string]string{"reroll.dev/auto": "true"}, Deleting: true, Now: now}
	p, err := DecideChange(defaults(), in, memory{})
	if err != nil || p.Outcome != Deleting || len(p.Annotations) != 0 {
		t.Errorf("Decide = %+v, %v; want Deleting and nothing written", p, err)
	}
}

func TestDecide_SourceErrorFails(t *testing.T) {
	in := Input{Kind: "Deployment", Namespace: "ns", Name: "web", Annotations: map[string]string{"reroll.dev/auto": "true"}, Template: template([]string{"cfg"}), Now: now}
	if _, err := DecideChange(defaults(), in, failing{}); err == nil || !strings.Contains(err.Error(), "ConfigMap ns/cfg") {
		t.Errorf("Decide error = %v, want one naming the object", err)
	}
}

type failing struct{}

func (failing) Object(reference.Kind, string, string) (Object, bool, error) {
	return Object{}, false, errors.New("cache not synced")
}
func (failing) Names(reference.Kind, string) ([]string, error) {
	return nil, errors.New("cache not synced")
}

func cronJob(annotations map[string]string) *batchv1.CronJob {
	return &batchv1.CronJob{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", Annotations: annotations}}
}

// recordFirstSight decides in's first sight over before, as Reroll records
// a workload it sees first, and puts the record, the key's ID and extra
// into in's annotations; input, if set, changes in last. It fails t unless
// the outcome is FirstSight.
func recordFirstSight(t *testing.T, o Options, in *Input, before memory, extra map[string]string, input func(*Input)) {
	t.Helper()
	first, err := DecideChange(o, *in, before)
	if err != nil || first.Outcome != FirstSight {
		t.Fatalf("recording: %v, outcome %s", err, first.Outcome)
	}
	in.Annotations[RecordAnnotation] = first.Record.String()
	in.Annotations[KeyAnnotation] = o.Key.ID()
	for k, v := range extra {
		in.Annotations[k] = v
	}
	if input != nil {
		input(in)
	}
}
