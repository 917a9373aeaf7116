package reference

import (
	"reflect"
	"testing"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

func TestFromPodTemplate(t *testing.T) {
	cases := map[string]struct {
		// spec is the pod spec under test.
		spec corev1.PodSpec
		// want is the expected result, in order.
		want []Reference
	}{
		"no references": {
			spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app"}}},
			want: nil,
		},
		"env valueFrom reads one key of each kind": {
			spec: corev1.PodSpec{Containers: []corev1.Container{{
				Name: "app",
				Env: []corev1.EnvVar{
					{Name: "A", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: cmKey("cfg", "a")}},
					{Name: "P", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: secretKey("db", "password")}},
					{Name: "PLAIN", Value: "x"},
				},
			}}},
			want: []Reference{
				{Kind: ConfigMap, Name: "cfg", Keys: []string{"a"}, Containers: []string{"app"}},
				{Kind: Secret, Name: "db", Keys: []string{"password"}, Containers: []string{"app"}},
			},
		},
		"envFrom reads the whole object": {
			spec: corev1.PodSpec{Containers: []corev1.Container{{
				Name: "app",
				EnvFrom: []corev1.EnvFromSource{
					{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: local("cfg")}},
					{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: local("db")}},
				},
			}}},
			want: []Reference{
				{Kind: ConfigMap, Name: "cfg", All: true, Containers: []string{"app"}},
				{Kind: Secret, Name: "db", All: true, Containers: []string{"app"}},
			},
		},
		"key references merge into a sorted union": {
			spec: corev1.PodSpec{Containers: []corev1.Container{
				{Name: "a", Env: []corev1.EnvVar{{Name: "Z", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: cmKey("cfg", "z")}}}},
				{Name: "b", Env: []corev1.EnvVar{
					{Name: "X", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: cmKey("cfg", "x")}},
					{Name: "Z2", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: cmKey("cfg", "z")}},
				}},
			}},
			want: []Reference{{Kind: ConfigMap, Name: "cfg", Keys: []string{"x", "z"}, Containers: []string{"a", "b"}}},
		},
		"a whole-object reference wins over a key reference": {
			spec: corev1.PodSpec{Containers: []corev1.Container{{
				Name:    "app",
				Env:     []corev1.EnvVar{{Name: "A", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: cmKey("cfg", "a")}}},
				EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: local("cfg")}}},
			}}},
			want: []Reference{{Kind: ConfigMap, Name: "cfg", All: true, Containers: []string{"app"}}},
		},
		"volumes with and without items, mounted and not": {
			spec: corev1.PodSpec{
				Containers: []corev1.Container{{Name: "app", VolumeMounts: []corev1.VolumeMount{{Name: "whole"}, {Name: "some"}}}},
				Volumes: []corev1.Volume{
					{Name: "whole", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: local("cfg")}}},
					{Name: "some", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "tls", Items: []corev1.KeyToPath{{Key: "tls.key", Path: "k"}, {Key: "tls.crt", Path: "c"}}}}},
					// Never mounted: still a reference, with no container.
					{Name: "spare", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: local("spare"), Optional: ptr.To(true)}}},
				},
			},
			want: []Reference{
				{Kind: ConfigMap, Name: "cfg", All: true, Containers: []string{"app"}},
				{Kind: ConfigMap, Name: "spare", All: true, Optional: true},
				{Kind: Secret, Name: "tls", Keys: []string{"tls.crt", "tls.key"}, Containers: []string{"app"}},
			},
		},
		"projected volume sources": {
			spec: corev1.PodSpec{
				Containers: []corev1.Container{{Name: "app", VolumeMounts: []corev1.VolumeMount{{Name: "all-in-one"}}}},
				Volumes: []corev1.Volume{{Name: "all-in-one", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
					{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: local("cfg"), Items: []corev1.KeyToPath{{Key: "app.yaml", Path: "app.yaml"}}}},
					{Secret: &corev1.SecretProjection{LocalObjectReference: local("db")}},
					{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}},
				}}}}},
			},
			want: []Reference{
				{Kind: ConfigMap, Name: "cfg", Keys: []string{"app.yaml"}, Containers: []string{"app"}},
				{Kind: Secret, Name: "db", All: true, Containers: []string{"app"}},
			},
		},
		"init containers come after regular containers": {
			spec: corev1.PodSpec{
				InitContainers: []corev1.Container{{Name: "init", EnvFrom: []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: local("db")}}}}},
				Containers:     []corev1.Container{{Name: "app", Env: []corev1.EnvVar{{Name: "P", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: secretKey("db", "password")}}}}},
			},
			want: []Reference{{Kind: Secret, Name: "db", All: true, Containers: []string{"app", "init"}}},
		},
		"only an init container reads it": {
			spec: corev1.PodSpec{
				InitContainers: []corev1.Container{{Name: "migrate", Env: []corev1.EnvVar{{Name: "U", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: cmKey("cfg", "url")}}}}},
				Containers:     []corev1.Container{{Name: "app"}},
			},
			want: []Reference{{Kind: ConfigMap, Name: "cfg", Keys: []string{"url"}, Containers: []string{"migrate"}}},
		},
		"empty names are ignored": {
			spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{}}}}}},
			want: nil,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			g := gomega.NewWithT(t)
			got := FromPodTemplate(&corev1.PodTemplateSpec{Spec: tc.spec})
			g.Expect(got).To(gomega.Equal(tc.want))
		})
	}
}

func TestFromPodTemplate_Optional(t *testing.T) {
	g := gomega.NewWithT(t)
	optional := &corev1.ConfigMapEnvSource{LocalObjectReference: local("cfg"), Optional: ptr.To(true)}
	required := &corev1.ConfigMapEnvSource{LocalObjectReference: local("cfg")}
	onlyOptional := FromPodTemplate(&corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{
		{Name: "a", EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: optional}}},
	}}})
	g.Expect(onlyOptional[0].Optional).To(gomega.BeTrue())
	mixed := FromPodTemplate(&corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{
		{Name: "a", EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: optional}}},
		{Name: "b", EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: required}}},
	}}})
	g.Expect(mixed[0].Optional).To(gomega.BeFalse(), "one required reference makes the object required")
}

func TestForWave(t *testing.T) {
	g := gomega.NewWithT(t)
	got := ForWave(&corev1.PodTemplateSpec{Spec: corev1.PodSpec{
		InitContainers: []corev1.Container{{Name: "init", EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: local("init-only")}}}}},
		Containers:     []corev1.Container{{Name: "app", Env: []corev1.EnvVar{{Name: "K", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: secretKey("db", "password")}}}}},
		Volumes: []corev1.Volume{
			{Name: "v", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: local("cfg"), Items: []corev1.KeyToPath{{Key: "a", Path: "a"}}}}},
			{Name: "p", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
				{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: local("proj"), Items: []corev1.KeyToPath{{Key: "x", Path: "x"}}}},
			}}}},
		},
	}})
	g.Expect(got).To(gomega.Equal([]Reference{
		// A plain volume counts every key in Wave, whatever its items say.
		{Kind: ConfigMap, Name: "cfg", All: true},
		// A projected source counts its items.
		{Kind: ConfigMap, Name: "proj", Keys: []string{"x"}},
		{Kind: Secret, Name: "db", Keys: []string{"password"}, Containers: []string{"app"}},
	}), "init containers are not read")
}

func TestReference_Consumes(t *testing.T) {
	g := gomega.NewWithT(t)
	some := Reference{Kind: ConfigMap, Name: "cfg", Keys: []string{"a", "c"}}
	g.Expect(some.Consumes("a")).To(gomega.BeTrue())
	g.Expect(some.Consumes("b")).To(gomega.BeFalse())
	g.Expect(Reference{Kind: Secret, Name: "s", All: true}.Consumes("anything")).To(gomega.BeTrue())
	g.Expect(some.ID()).To(gomega.Equal("ConfigMap/cfg"))
}

func TestFromPodTemplate_Nil(t *testing.T) {
	gomega.NewWithT(t).Expect(FromPodTemplate(nil)).To(gomega.BeNil())
}

func local(name string) corev1.LocalObjectReference { return corev1.LocalObjectReference{Name: name} }

func cmKey(name, key string) *corev1.ConfigMapKeySelector {
	return &corev1.ConfigMapKeySelector{LocalObjectReference: local(name), Key: key}
}

func secretKey(name, key string) *corev1.SecretKeySelector {
	return &corev1.SecretKeySelector{LocalObjectReference: local(name), Key: key}
}

func TestSecretProviderClasses(t *testing.T) {
	csi := func(name, driver, class string) corev1.Volume {
		return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{
			Driver: driver, VolumeAttributes: map[string]string{CSIProviderClassAttribute: class}}}}
	}
	cases := map[string]struct {
		// volumes and mounts (of container "app") make the pod template.
		volumes []corev1.Volume
		mounts  []string
		// want are the references returned.
		want []Reference
	}{
		"none":                {want: nil},
		"another CSI driver":  {volumes: []corev1.Volume{csi("v", "ebs.csi.aws.com", "x")}, want: nil},
		"no class attribute":  {volumes: []corev1.Volume{csi("v", CSIDriver, "")}, want: nil},
		"mounted class":       {volumes: []corev1.Volume{csi("v", CSIDriver, "vault")}, mounts: []string{"v"}, want: []Reference{{Kind: SecretProviderClass, Name: "vault", All: true, Containers: []string{"app"}}}},
		"unmounted class":     {volumes: []corev1.Volume{csi("v", CSIDriver, "vault")}, want: []Reference{{Kind: SecretProviderClass, Name: "vault", All: true}}},
		"two volumes, sorted": {volumes: []corev1.Volume{csi("v", CSIDriver, "b"), csi("w", CSIDriver, "a"), csi("x", CSIDriver, "b")}, want: []Reference{{Kind: SecretProviderClass, Name: "a", All: true}, {Kind: SecretProviderClass, Name: "b", All: true}}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			tpl := &corev1.PodTemplateSpec{Spec: corev1.PodSpec{Volumes: tc.volumes, Containers: []corev1.Container{{Name: "app"}}}}
			for _, m := range tc.mounts {
				tpl.Spec.Containers[0].VolumeMounts = append(tpl.Spec.Containers[0].VolumeMounts, corev1.VolumeMount{Name: m, MountPath: "/m"})
			}
			got := SecretProviderClasses(tpl)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("SecretProviderClasses = %+v, want %+v", got, tc.want)
			}
			if len(FromPodTemplate(tpl)) != 0 {
				t.Errorf("FromPodTemplate lists a CSI volume")
			}
		})
	}
}
