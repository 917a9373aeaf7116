package pingc

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/reroll/reroll/internal/reference"
)

func TestDecide(t *testing.T) {
	now := time.Date(2026, 11, 26, 23, 0, 0, 0, time.UTC)
	old := now.Add(-10 * time.Minute)
	// cp is a signed copy last written at old.
	cp := func(kind reference.Kind, name string) Copy {
		return Copy{Kind: kind, Name: name, UID: types.UID("uid-" + name), ResourceVersion: "1", Signed: true, LastWrite: old}
	}
	names := func(pairs ...string) Names {
		var n Names
		for i := 0; i < len(pairs); i += 2 {
			n.Add(reference.Kind(pairs[i]), pairs[i+1])
		}
		return n
	}
	cases := map[string]struct {
		// copies are the copies in the namespace.
		copies []Copy
		// named is what the namespace's objects name.
		named Names
		// deleted are the names Decide deletes.
		deleted []string
		// kept maps the names kept to the reason.
		kept map[string]Reason
		// requeue is the Decision's Requeue.
		requeue time.Duration
	}{
		"a copy nothing names, written long ago, is deleted and nothing is left to look at": {
			copies:  []Copy{cp(reference.ConfigMap, "app-abc")},
			deleted: []string{"app-abc"},
			kept:    map[string]Reason{},
		},
		"a copy a template, ReplicaSet, revision, Job or pod names is kept, and looked at again after a period": {
			copies:  []Copy{cp(reference.ConfigMap, "app-abc"), cp(reference.ConfigMap, "app-def")},
			named:   names("ConfigMap", "app-def"),
			deleted: []string{"app-abc"},
			kept:    map[string]Reason{"app-def": KeptNamed},
			requeue: DefaultPeriod,
		},
		"a name of the other kind does not keep a copy": {
			copies:  []Copy{cp(reference.Secret, "db-abc")},
			named:   names("ConfigMap", "db-abc"),
			deleted: []string{"db-abc"},
			kept:    map[string]Reason{},
		},
		"a copy that a tenant made, whose signature does not verify, is never deleted": {
			copies: []Copy{func() Copy { c := cp(reference.Secret, "db-abc"); c.Signed = false; return c }()},
			kept:   map[string]Reason{"db-abc": KeptUnsigned},
		},
		"a copy written less than the grace ago is kept although nothing names it yet, and looked at when the grace ends": {
			copies: []Copy{func() Copy {
				c := cp(reference.Secret, "db-abc")
				c.LastWrite = now.Add(-DefaultGrace + 10*time.Second)
				return c
			}()},
			kept: map[string]Reason{"db-abc": KeptRecent},
			// 10 s of grace left, and a second for LastWrite's rounding.
			requeue: 11 * time.Second,
		},
		"a copy written exactly the grace ago is deleted": {
			copies:  []Copy{func() Copy { c := cp(reference.Secret, "db-abc"); c.LastWrite = now.Add(-DefaultGrace); return c }()},
			deleted: []string{"db-abc"},
			kept:    map[string]Reason{},
		},
		"a copy being deleted already is left to the API server": {
			copies: []Copy{func() Copy { c := cp(reference.ConfigMap, "app-abc"); c.Deleting = true; return c }()},
			kept:   map[string]Reason{"app-abc": KeptDeleting},
		},
		"no copies, nothing to do": {
			kept: map[string]Reason{},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			d := Decide(tc.copies, tc.named, now, Options{})
			var deleted []string
			for _, c := range d.Delete {
				deleted = append(deleted, c.Name)
			}
			if !slices.Equal(deleted, tc.deleted) {
				t.Errorf("deleted %v, want %v", deleted, tc.deleted)
			}
			kept := map[string]Reason{}
			for _, k := range d.Kept {
				kept[k.Copy.Name] = k.Reason
			}
			if len(kept) != len(tc.kept) {
				t.Errorf("kept %v, want %v", kept, tc.kept)
			}
			for n, r := range tc.kept {
				if kept[n] != r {
					t.Errorf("kept %s for %q, want %q", n, kept[n], r)
				}
			}
			if d.Requeue != tc.requeue {
				t.Errorf("requeue %v, want %v", d.Requeue, tc.requeue)
			}
		})
	}
}

func TestDecide_DeletesWithTheReadPreconditions(t *testing.T) {
	now := time.Now()
	c := Copy{Kind: reference.ConfigMap, Name: "a", UID: "u1", ResourceVersion: "42", Signed: true, LastWrite: now.Add(-time.Hour)}
	d := Decide([]Copy{c}, Names{}, now, Options{})
	if len(d.Delete) != 1 || d.Delete[0].UID != "u1" || d.Delete[0].ResourceVersion != "42" {
		t.Fatalf("Delete = %+v, want the copy with UID u1 and resourceVersion 42", d.Delete)
	}
}

func TestCandidates_LeaveOutNamedUnsignedAndDeletingCopies(t *testing.T) {
	var named Names
	named.Add(reference.Secret, "named")
	copies := []Copy{
		{Kind: reference.Secret, Name: "named", Signed: true},
		{Kind: reference.Secret, Name: "unsigned"},
		{Kind: reference.Secret, Name: "deleting", Signed: true, Deleting: true},
		{Kind: reference.Secret, Name: "free", Signed: true},
	}
	got := Candidates(copies, named)
	if len(got) != 1 || got[0].Name != "free" {
		t.Fatalf("Candidates = %+v, want only free", got)
	}
}

func TestNamesOf(t *testing.T) {
	spec := &corev1.PodSpec{
		InitContainers: []corev1.Container{{EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "init-cm"}}}}}},
		Containers: []corev1.Container{{
			Env: []corev1.EnvVar{
				{Name: "A", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "env-cm"}, Key: "a"}}},
				{Name: "B", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "env-secret"}, Key: "b"}}},
				{Name: "C", Value: "plain"},
			},
			EnvFrom: []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "envfrom-secret"}}}},
		}},
		EphemeralContainers: []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
			EnvFrom: []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "debug-secret"}}}},
		}}},
		ImagePullSecrets: []corev1.LocalObjectReference{{Name: "pull"}},
		Volumes: []corev1.Volume{
			{VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "vol-cm"}}}},
			{VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "vol-secret"}}},
			{VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
				{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "proj-cm"}}},
				{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "proj-secret"}}},
			}}}},
			{VolumeSource: corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{Driver: "x", NodePublishSecretRef: &corev1.LocalObjectReference{Name: "csi-secret"}}}},
		},
	}
	got := NamesOf(spec)
	want := map[reference.Kind][]string{
		reference.ConfigMap: {"init-cm", "env-cm", "vol-cm", "proj-cm"},
		reference.Secret:    {"env-secret", "envfrom-secret", "debug-secret", "pull", "vol-secret", "proj-secret", "csi-secret"},
	}
	n := 0
	for kind, names := range want {
		for _, name := range names {
			n++
			if !got.Has(kind, name) {
				t.Errorf("NamesOf misses %s %s", kind, name)
			}
		}
	}
	if got.Len() != n {
		t.Errorf("NamesOf has %d names, want %d", got.Len(), n)
	}
	if NamesOf(nil).Len() != 0 {
		t.Error("NamesOf(nil) names something")
	}
}
