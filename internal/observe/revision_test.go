package observe

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"

	"github.com/reroll/reroll/internal/revert"
)

// The files in testdata were captured from the local control plane
// (kube-controller-manager v1.32.4): a versioned StatefulSet "db" and a
// versioned DaemonSet "agent", each reading ConfigMap app-config through
// envFrom and a volume, pinned by Reroll on first sight. Revision 1 is the
// template as created, revision 2 the one Reroll wrote (its references
// renamed to the copy, reroll.dev/pinned added); *-template.json is the
// workload's spec.template as the API server returned it after the write.
// The fingerprints are those Reroll recorded then in the workload's
// reroll.dev/template-patch: {"before":..., "after":...}.
func TestRevisionTemplate(t *testing.T) {
	cases := map[string]struct {
		// data is the ControllerRevision's data, or file names a testdata
		// file holding it.
		data string
		file string
		// fingerprint is the revert.Fingerprint the decoded template must
		// have ("" when it decodes to nil or fails).
		fingerprint string
		// same names a testdata file holding a workload's template that the
		// decoded template must equal ("" for no check).
		same string
		// wantNil is true when the data holds no template; wantErr when it
		// does not decode.
		wantNil, wantErr bool
	}{
		"a StatefulSet's revision before Reroll's write has the fingerprint Reroll recorded as before": {
			file: "statefulset-db-revision-1.json", fingerprint: "c9bee5dd3064cabd",
		},
		"a StatefulSet's revision of Reroll's write has the fingerprint Reroll recorded as after": {
			file: "statefulset-db-revision-2.json", fingerprint: "9d422e6f8e202a19", same: "statefulset-db-template.json",
		},
		"a DaemonSet's revision before Reroll's write has the fingerprint Reroll recorded as before": {
			file: "daemonset-agent-revision-1.json", fingerprint: "63601a4d0e5b1cdf",
		},
		"a DaemonSet's revision of Reroll's write has the fingerprint Reroll recorded as after": {
			file: "daemonset-agent-revision-2.json", fingerprint: "b530ce4b0361a48a", same: "daemonset-agent-template.json",
		},
		"data without a template (a revision of another kind) holds none": {
			data: `{"spec":{"replicas":3}}`, wantNil: true,
		},
		"data that is not JSON is an error": {
			data: `spec: {}`, wantErr: true,
		},
		"a template that is not a pod template is an error": {
			data: `{"spec":{"template":{"$patch":"replace","spec":{"containers":"app"}}}}`, wantErr: true,
		},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			g := gomega.NewWithT(t)
			data := []byte(c.data)
			if c.file != "" {
				var err error
				data, err = os.ReadFile(filepath.Join("testdata", c.file))
				g.Expect(err).NotTo(gomega.HaveOccurred())
			}
			got, err := RevisionTemplate(data)
			if c.wantErr {
				g.Expect(err).To(gomega.HaveOccurred())
				return
			}
			g.Expect(err).NotTo(gomega.HaveOccurred())
			if c.wantNil {
				g.Expect(got).To(gomega.BeNil())
				return
			}
			g.Expect(got).NotTo(gomega.BeNil())
			g.Expect(revert.Fingerprint(got)).To(gomega.Equal(c.fingerprint))
			b, err := json.Marshal(got)
			g.Expect(err).NotTo(gomega.HaveOccurred())
			g.Expect(string(b)).NotTo(gomega.ContainSubstring("$patch"), "the directive is dropped")
			if c.same != "" {
				raw, err := os.ReadFile(filepath.Join("testdata", c.same))
				g.Expect(err).NotTo(gomega.HaveOccurred())
				var want corev1.PodTemplateSpec
				g.Expect(json.Unmarshal(raw, &want)).To(gomega.Succeed())
				g.Expect(*got).To(gomega.Equal(want))
			}
		})
	}
}
