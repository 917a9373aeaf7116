package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/onsi/gomega"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// validatorYAML is a Validator for ConfigMap app-config: config.json must
// be JSON, and a CEL range check on it.
const validatorYAML = `apiVersion: reroll.dev/v1alpha1
kind: Validator
metadata:
  name: app-config
spec:
  kind: ConfigMap
  names: [app-config]
  rules:
    - name: config-json
      key: config.json
      format: JSON
    - name: replicas
      expression: "json(data['config.json']).replicas <= 10"
      message: replicas must be at most 10
---
apiVersion: reroll.dev/v1alpha1
kind: Validator
metadata:
  name: tls
spec:
  kind: Secret
  names: [tls]
  rules:
    - name: password-json
      key: password
      format: JSON
`

// runValidate runs `kubectl reroll validate` on the files in a new folder
// and returns its output and exit status.
func runValidate(t *testing.T, files map[string]string, args ...string) (string, int) {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// Offline: no kubeconfig at all.
	t.Setenv("KUBECONFIG", filepath.Join(dir, "none"))
	var out bytes.Buffer
	code := Run(append([]string{"validate", "-f", dir, "-n", "shop"}, args...),
		genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &out})
	return out.String(), code
}

func appConfigYAML(configJSON string) string {
	b, _ := json.Marshal(configJSON)
	return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app-config\ndata:\n  config.json: " + string(b) + "\n"
}

func TestValidate_ExitsZeroOnValidContentAndOneOnAFailingObject(t *testing.T) {
	g := gomega.NewWithT(t)
	// Positive first: valid content, exit 0, the object was checked.
	out, code := runValidate(t, map[string]string{"rules.yaml": validatorYAML, "cm.yaml": appConfigYAML(`{"replicas": 3}`)})
	g.Expect(code).To(gomega.Equal(0), out)
	g.Expect(out).To(gomega.ContainSubstring("0 of 1 objects fail, with 2 Validators"))

	out, code = runValidate(t, map[string]string{"rules.yaml": validatorYAML, "cm.yaml": appConfigYAML(`{"replicas": 3,}`)})
	g.Expect(code).To(gomega.Equal(1), out)
	g.Expect(lines(out)).To(gomega.ContainElements(
		`OBJECT VALIDATOR RULE KEY MESSAGE`,
		`shop/ConfigMap/app-config app-config config-json config.json is not valid JSON: invalid character '}' looking for beginning of object key string at line 1, column 16`,
		`shop/ConfigMap/app-config app-config replicas - expression failed: json(): the value is not valid JSON`,
		`1 of 1 objects fail, with 2 Validators`,
		`error: content fails validation: 1 of 1 objects fail, 0 rules do not compile`,
	))

	out, code = runValidate(t, map[string]string{"rules.yaml": validatorYAML, "cm.yaml": appConfigYAML(`{"replicas": 11}`)})
	g.Expect(code).To(gomega.Equal(1), out)
	g.Expect(out).To(gomega.ContainSubstring("replicas must be at most 10"))
}

func TestValidate_PrintsJSONWithoutASecretsValue(t *testing.T) {
	g := gomega.NewWithT(t)
	secret := "apiVersion: v1\nkind: Secret\nmetadata:\n  name: tls\nstringData:\n  password: \"hunter2-{oops\"\n"
	out, code := runValidate(t, map[string]string{"rules.yaml": validatorYAML, "s.yaml": secret, "cm.yaml": appConfigYAML(`{"replicas": 1}`)}, "-o", "json")
	g.Expect(code).To(gomega.Equal(1), out)
	doc := out[:strings.LastIndex(out, "error:")]
	var r validationReport
	g.Expect(json.Unmarshal([]byte(doc), &r)).To(gomega.Succeed(), doc)
	g.Expect(r.Objects).To(gomega.Equal([]string{"shop/ConfigMap/app-config", "shop/Secret/tls"}))
	g.Expect(r.Summary).To(gomega.Equal(validationSummary{Objects: 2, Failed: 1}))
	g.Expect(r.Findings).To(gomega.HaveLen(1))
	g.Expect(r.Findings[0].Object).To(gomega.Equal("shop/Secret/tls"))
	g.Expect(r.Findings[0].Message).To(gomega.Equal("is not valid JSON: syntax error at line 1, column 1"))
	g.Expect(out).NotTo(gomega.ContainSubstring("hunter2"))
	g.Expect(out).NotTo(gomega.ContainSubstring("oops"))
}

func TestValidate_FailsOnARuleThatDoesNotCompile(t *testing.T) {
	g := gomega.NewWithT(t)
	bad := strings.Replace(validatorYAML, "json(data['config.json']).replicas <= 10", "data.all(k, data.all(j, data[k] == data[j]))", 1)
	out, code := runValidate(t, map[string]string{"rules.yaml": bad, "cm.yaml": appConfigYAML(`{"replicas": 3}`)})
	g.Expect(code).To(gomega.Equal(1), out)
	g.Expect(out).To(gomega.ContainSubstring("Validator shop/app-config does not compile (CostBudgetExceeded, rule replicas)"))
}

// clusterValidatorYAML is a ClusterValidator for ConfigMap app-config in
// the namespaces labelled tier=prod: config.json must be JSON.
const clusterValidatorYAML = `apiVersion: reroll.dev/v1alpha1
kind: ClusterValidator
metadata:
  name: prod-json
spec:
  namespaceSelector:
    matchLabels:
      tier: prod
  kind: ConfigMap
  names: [app-config]
  rules:
    - name: config-json
      key: config.json
      format: JSON
`

func namespaceYAML(labels string) string {
	return "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: shop\n  labels: {" + labels + "}\n"
}

func TestValidate_AppliesAClusterValidatorToTheNamespacesItSelects(t *testing.T) {
	g := gomega.NewWithT(t)
	broken := appConfigYAML(`{"replicas": 3,}`)
	// Positive first: the Namespace in the files is selected, and the
	// ClusterValidator fails the object.
	out, code := runValidate(t, map[string]string{"rules.yaml": clusterValidatorYAML, "ns.yaml": namespaceYAML("tier: prod"), "cm.yaml": broken})
	g.Expect(code).To(gomega.Equal(1), out)
	g.Expect(lines(out)).To(gomega.ContainElements(
		`shop/ConfigMap/app-config ClusterValidator/prod-json config-json config.json is not valid JSON: invalid character '}' looking for beginning of object key string at line 1, column 16`,
		`1 of 1 objects fail, with 1 Validators`,
	))

	// A namespace the selector does not select: not applied.
	out, code = runValidate(t, map[string]string{"rules.yaml": clusterValidatorYAML, "ns.yaml": namespaceYAML("tier: dev"), "cm.yaml": broken})
	g.Expect(code).To(gomega.Equal(0), out)
	g.Expect(out).To(gomega.ContainSubstring("0 of 1 objects fail, with 1 Validators"))
	g.Expect(out).NotTo(gomega.ContainSubstring("Note:"))

	// No Namespace in the files: its labels are unknown, said, and the
	// ClusterValidator that selects by label is not applied.
	out, code = runValidate(t, map[string]string{"rules.yaml": clusterValidatorYAML, "cm.yaml": broken})
	g.Expect(code).To(gomega.Equal(0), out)
	g.Expect(out).To(gomega.ContainSubstring("Note: namespace shop: its labels are unknown"))

	// One that selects every namespace applies there all the same.
	every := strings.Replace(clusterValidatorYAML, "    matchLabels:\n      tier: prod\n", "    {}\n", 1)
	every = strings.Replace(every, "  namespaceSelector:\n    {}\n", "  namespaceSelector: {}\n", 1)
	out, code = runValidate(t, map[string]string{"rules.yaml": every, "cm.yaml": broken})
	g.Expect(code).To(gomega.Equal(1), out)
	g.Expect(lines(out)).To(gomega.ContainElement(gomega.HavePrefix("shop/ConfigMap/app-config ClusterValidator/prod-json config-json")))
	g.Expect(out).NotTo(gomega.ContainSubstring("Note:"))
}
