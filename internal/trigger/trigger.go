package trigger

import (
	"encoding/json"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"

	"github.com/reroll/reroll/internal/reference"
)

// Strategy is how a rollout is triggered; the values are Reloader's
// --reload-strategy values.
type Strategy string

const (
	// Annotations sets ConfigHashAnnotation on the pod template.
	Annotations Strategy = "annotations"
	// EnvVars sets Reloader's STAKATER_* environment variable on a container.
	EnvVars Strategy = "env-vars"
)

// ParseStrategy returns the Strategy named s, or an error naming the accepted
// values.
func ParseStrategy(s string) (Strategy, error) {
	switch Strategy(s) {
	case Annotations, EnvVars:
		return Strategy(s), nil
	}
	return "", fmt.Errorf("unknown reload strategy %q (want %q or %q)", s, Annotations, EnvVars)
}

// ConfigHashAnnotation is the pod template annotation of the annotations
// strategy. Its value is a lowercase hex SHA-256 over the consumed keys of all
// references, so it changes exactly when consumed data changes.
const ConfigHashAnnotation = "reroll.dev/config-hash"

// PodReloaderHashAnnotation is the pod template annotation SAP pod-reloader
// writes; Reroll writes it, with pod-reloader's value, for workloads that
// use pod-reloader's annotations.
const PodReloaderHashAnnotation = "pod-reloader.cs.sap.com/config-hash"

// WaveHashAnnotation is the pod template annotation Wave writes; Reroll
// writes it, with Wave's value, for workloads that use Wave's annotations.
const WaveHashAnnotation = "wave.pusher.com/config-hash"

// SetConfigHash sets ConfigHashAnnotation on the pod template and reports
// whether that changed the template.
func SetConfigHash(t *corev1.PodTemplateSpec, hash string) bool {
	return SetAnnotation(t, ConfigHashAnnotation, hash)
}

// SetAnnotation sets one pod template annotation and reports whether that
// changed the template.
func SetAnnotation(t *corev1.PodTemplateSpec, key, value string) bool {
	if v, ok := t.Annotations[key]; ok && v == value {
		return false
	}
	if t.Annotations == nil {
		t.Annotations = map[string]string{}
	}
	t.Annotations[key] = value
	return true
}

// EnvVarName returns Reloader's environment variable name for an object:
// "STAKATER_", then the name upper-cased with every run of characters outside
// A-Z and 0-9 turned into a single "_" (never a leading one), then
// "_CONFIGMAP" or "_SECRET". For example ConfigMap "my.app-config" gives
// STAKATER_MY_APP_CONFIG_CONFIGMAP.
func EnvVarName(kind reference.Kind, name string) string {
	var b strings.Builder
	b.WriteString("STAKATER_")
	pendingSep := false
	for _, r := range strings.ToUpper(name) {
		if (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9') {
			if pendingSep && b.Len() > len("STAKATER_") {
				b.WriteByte('_')
			}
			pendingSep = false
			b.WriteRune(r)
			continue
		}
		pendingSep = true
	}
	if pendingSep && b.Len() > len("STAKATER_") {
		b.WriteByte('_')
	}
	b.WriteString("_")
	b.WriteString(strings.ToUpper(string(kind)))
	return b.String()
}

// EnvVarContainer returns the container that carries an object's env var, as
// Reloader chooses it: the first regular container that reads the object;
// else the first container of the pod (when only an init container reads it,
// or when it is only listed by name). It returns nil for a template without
// containers.
func EnvVarContainer(t *corev1.PodTemplateSpec, ref reference.Reference) *corev1.Container {
	for _, name := range ref.Containers {
		for i := range t.Spec.Containers {
			if t.Spec.Containers[i].Name == name {
				return &t.Spec.Containers[i]
			}
		}
	}
	if len(t.Spec.Containers) == 0 {
		return nil
	}
	return &t.Spec.Containers[0]
}

// SetEnv sets the env var named name to value on the container, adding it
// when absent, and reports whether the container changed.
func SetEnv(c *corev1.Container, name, value string) bool {
	for i := range c.Env {
		if c.Env[i].Name != name {
			continue
		}
		if c.Env[i].Value == value && c.Env[i].ValueFrom == nil {
			return false
		}
		c.Env[i].Value, c.Env[i].ValueFrom = value, nil
		return true
	}
	c.Env = append(c.Env, corev1.EnvVar{Name: name, Value: value})
	return true
}

// LastReloadedFromAnnotation is the pod template annotation that Reloader's
// annotations strategy writes; Reroll writes it for workloads that opted in
// with Reloader's annotations, so their outputs stay Reloader's.
const LastReloadedFromAnnotation = "reloader.stakater.com/last-reloaded-from"

// ReloadedFrom is Reloader's JSON record of the object behind a rollout, the
// value of LastReloadedFromAnnotation.
type ReloadedFrom struct {
	// Type is "CONFIGMAP" or "SECRET".
	Type string `json:"type"`
	// Name and Namespace identify the object.
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
	// Hash is Reloader's SHA-1 of the object's data (lowercase hex).
	Hash string `json:"hash"`
	// ContainerRefs names the containers that read the object.
	ContainerRefs []string `json:"containerRefs"`
	// ObservedAt is when the change was seen, in Unix seconds.
	ObservedAt int64 `json:"observedAt"`
}

// SetLastReloadedFrom writes rec as LastReloadedFromAnnotation and reports
// whether the template changed. A record that differs from the one there
// only in ObservedAt changes nothing, so a rollout never happens without a
// content change.
func SetLastReloadedFrom(t *corev1.PodTemplateSpec, rec ReloadedFrom) bool {
	if cur, ok := t.Annotations[LastReloadedFromAnnotation]; ok {
		var old ReloadedFrom
		if json.Unmarshal([]byte(cur), &old) == nil {
			old.ObservedAt = rec.ObservedAt
			if equality.Semantic.DeepEqual(old, rec) {
				return false
			}
		}
	}
	if rec.ContainerRefs == nil {
		rec.ContainerRefs = []string{}
	}
	b, _ := json.Marshal(rec) // strings and numbers always encode
	if t.Annotations == nil {
		t.Annotations = map[string]string{}
	}
	t.Annotations[LastReloadedFromAnnotation] = string(b)
	return true
}
