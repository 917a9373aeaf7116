package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	rerollv1alpha1 "github.com/reroll/reroll/api/v1alpha1"
)

// validatorEnv, set to 1, makes the fanout profile put one Validator on the
// shared ConfigMap before Reroll starts (`BENCH_VALIDATOR=1 make bench
// PROFILE=fanout`), to compare with a run without: validation reads and
// checks the ConfigMap once per change, however many Deployments read it.
const validatorEnv = "BENCH_VALIDATOR"

// withValidator reports whether validatorEnv asks for the Validator.
func withValidator() bool { return os.Getenv(validatorEnv) == "1" }

// installValidator creates the Validator CRD of config/crd/validators
// (read from the repository, where `make bench` runs) and, once it is
// served, a Validator in the shared namespace that checks the shared
// ConfigMap: a required key, a maximum size, and a CEL rule over the key.
func installValidator(ctx context.Context, cfg *rest.Config) error {
	scheme := runtime.NewScheme()
	if err := apiextensionsv1.AddToScheme(scheme); err != nil {
		return err
	}
	if err := rerollv1alpha1.AddToScheme(scheme); err != nil {
		return err
	}
	// JSON: the bench's config asks for protobuf, which custom resources
	// do not speak.
	jsonCfg := rest.CopyConfig(cfg)
	jsonCfg.ContentType, jsonCfg.AcceptContentTypes = "application/json", "application/json"
	c, err := client.New(jsonCfg, client.Options{Scheme: scheme})
	if err != nil {
		return err
	}
	b, err := os.ReadFile(filepath.Join("config", "crd", "validators", "reroll.dev_validators.yaml"))
	if err != nil {
		return fmt.Errorf("reading the Validator CRD (run from the repository's root): %w", err)
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.Unmarshal(b, &crd); err != nil {
		return fmt.Errorf("decoding the Validator CRD: %w", err)
	}
	if err := c.Create(ctx, &crd); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating the Validator CRD: %w", err)
	}
	maxSize := resource.MustParse("1Mi")
	v := &rerollv1alpha1.Validator{
		ObjectMeta: metav1.ObjectMeta{Namespace: sharedNamespace, Name: sharedConfigMap},
		Spec: rerollv1alpha1.ValidatorSpec{Kind: rerollv1alpha1.KindConfigMap, Names: []string{sharedConfigMap},
			Rules: []rerollv1alpha1.ValidationRule{
				{Name: "shape", RequiredKeys: []string{configKey}, MaxSize: &maxSize},
				{Name: "log-level", Expression: fmt.Sprintf("size(data['%s']) <= 64", configKey)},
			}},
	}
	// The CRD is served a moment after it is created.
	return wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		err := c.Create(ctx, v)
		if err == nil || apierrors.IsAlreadyExists(err) {
			return true, nil
		}
		logf("validator: waiting for the Validator API: %v", err)
		return false, nil
	})
}
