package cli

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"testing"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// helmReleaseSecret is the Secret Helm 3 keeps for revision version of
// release name: data "release" is base64 of the gzipped JSON release, whose
// "config" holds the values given.
func helmReleaseSecret(t *testing.T, ns, name, version, status string, config map[string]any) *corev1.Secret {
	t.Helper()
	var zipped bytes.Buffer
	zw := gzip.NewWriter(&zipped)
	if err := json.NewEncoder(zw).Encode(map[string]any{"name": name, "config": config}); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "sh.helm.release.v1." + name + ".v" + version,
			Labels: map[string]string{"owner": "helm", "name": name, "status": status, "version": version}},
		Type: "helm.sh/release.v1",
		Data: map[string][]byte{"release": []byte(base64.StdEncoding.EncodeToString(zipped.Bytes()))},
	}
}

func TestMigrateCheck_FromClusterReadsReloadersArgumentsAndHelmValues(t *testing.T) {
	t.Parallel()
	g := newT(t)
	ns := newNamespace(t)
	// Reloader as its chart installs it from a mirror, with a typo in the
	// values of the deployed revision; an older, superseded revision had
	// none.
	reloader := deployment(ns, "reloader-reloader", nil, pod(container(func(c *corev1.Container) {
		c.Image = "harbor.corp/proxy/reloader:v1.4.21"
		c.Args = []string{"--reload-strategy=env-vars", "--is-Argo-Rollouts", "true", "--log-format=json"}
	})))
	reloader.Annotations = map[string]string{"meta.helm.sh/release-name": "reloader"}
	create(t,
		deployment(ns, "web", nil, pod(container())),
		reloader,
		helmReleaseSecret(t, ns, "reloader", "1", "superseded", map[string]any{"reloader": map[string]any{"reloadOnCreate": true}}),
		helmReleaseSecret(t, ns, "reloader", "2", "deployed", map[string]any{"reloader": map[string]any{"reloadOnCreate": true, "watchGlobaly": false}}),
	)

	out, err := kubectlReroll(t, "-n", ns, "migrate-check", "--from-cluster", "-o", "json")
	g.Expect(err).To(gomega.MatchError(ErrMigrationDiffers))
	g.Expect(ExitCode(err)).To(gomega.Equal(1))
	var r migrationReport
	g.Expect(json.Unmarshal([]byte(out), &r)).To(gomega.Succeed(), out)
	g.Expect(r.Source).To(gomega.Equal("Deployment " + ns + "/reloader-reloader"))
	args := map[string]string{}
	for _, f := range r.Arguments {
		args[f.Key] = string(f.Verdict)
	}
	g.Expect(args).To(gomega.Equal(map[string]string{
		"--reload-strategy": "same", "--is-Argo-Rollouts": "mapped", "--log-format": "same",
		"(default) --storm-max-rollouts": "refused",
	}))
	values := map[string]string{}
	for _, f := range r.Values {
		values[f.Key] = string(f.Verdict)
	}
	g.Expect(values).To(gomega.Equal(map[string]string{"reloader.reloadOnCreate": "same", "reloader.watchGlobaly": "invalid"}))

	// No Reloader in a namespace: the check did not run, exit 2.
	_, err = kubectlReroll(t, "-n", newNamespace(t), "migrate-check", "--from-cluster")
	g.Expect(err).To(gomega.MatchError(gomega.ContainSubstring("no Deployment running Reloader's image")))
	g.Expect(ExitCode(err)).To(gomega.Equal(ExitMigrationError))
}
