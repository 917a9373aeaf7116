package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// profile is the shape of the cluster a run creates.
type profile struct {
	Name string `json:"name"`
	// Namespaces holds Secrets, ConfigMaps and Deployments each.
	Namespaces int `json:"namespaces"`
	// SecretsPerNamespace Secrets of SecretSize bytes; Deployment i reads
	// Secret i, the rest are referenced by nothing.
	SecretsPerNamespace int `json:"secretsPerNamespace"`
	SecretSize          int `json:"secretSizeBytes"`
	// ConfigMapsPerNamespace ConfigMaps; Deployment i reads ConfigMap i.
	ConfigMapsPerNamespace  int `json:"configMapsPerNamespace"`
	DeploymentsPerNamespace int `json:"deploymentsPerNamespace"`
	// SharedDeployments read the one ConfigMap of namespace bench-shared.
	SharedDeployments int `json:"sharedDeployments"`
	// SharedSecret: the shared Deployments also read one Secret of
	// bench-shared (the safety profile changes it).
	SharedSecret bool `json:"sharedSecret,omitempty"`
	// OptIn is the annotation, set to "true", by which every Deployment
	// opts in; empty means reroll.dev/auto. A side-by-side run with a
	// peer uses Reloader's, which both controllers read.
	OptIn string `json:"optIn,omitempty"`
}

var profiles = map[string]profile{
	"small": {Name: "small", Namespaces: 5, SecretsPerNamespace: 20, SecretSize: 1 << 10, ConfigMapsPerNamespace: 10, DeploymentsPerNamespace: 10, SharedDeployments: 50},
	"large": {Name: "large", Namespaces: 20, SecretsPerNamespace: 500, SecretSize: 10 << 10, ConfigMapsPerNamespace: 20, DeploymentsPerNamespace: 20, SharedDeployments: 50},
	// fanout: one ConfigMap read by 2,000 Deployments (see fanout.go),
	// and one namespace of 50 Deployments with a ConfigMap and a Secret
	// each, for the storm of a side-by-side run.
	"fanout": {Name: "fanout", Namespaces: 1, SecretsPerNamespace: 50, SecretSize: 1 << 10, ConfigMapsPerNamespace: 50, DeploymentsPerNamespace: 50, SharedDeployments: 2000},
	// xl: 100 namespaces, 100,000 Secrets of 1 KiB, 10,000 Deployments.
	"xl": {Name: "xl", Namespaces: 100, SecretsPerNamespace: 1000, SecretSize: 1 << 10, ConfigMapsPerNamespace: 100, DeploymentsPerNamespace: 100},
	// fairness: one tenant's 1,000 Deployments read one ConfigMap, another
	// namespace has 10 workloads of its own (see fairness.go, issue #32).
	"fairness": {Name: "fairness", Namespaces: 1, SecretsPerNamespace: 10, SecretSize: 1 << 10, ConfigMapsPerNamespace: 10, DeploymentsPerNamespace: 10, SharedDeployments: 1000},
	// settled: 1,520 Deployments that kube-controller-manager settles
	// before Reroll's first start (see settled.go, issue #36).
	"settled": {Name: "settled", Namespaces: 19, SecretsPerNamespace: 80, SecretSize: 1 << 10, ConfigMapsPerNamespace: 80, DeploymentsPerNamespace: 80},
	// safety: 500 Deployments share one Secret (see safety.go).
	"safety": {Name: "safety", SecretSize: 1 << 10, SharedDeployments: 500, SharedSecret: true},
}

const (
	sharedNamespace = "bench-shared"
	sharedConfigMap = "shared"
	// secretKey is the one key of every Secret, read by valueFrom.
	secretKey = "value"
	// configKey is the ConfigMap key the scenarios change.
	configKey      = "LOG_LEVEL"
	autoAnnotation = "reroll.dev/auto"
	// reloaderAutoAnnotation is Reloader's opt-in, which Reroll reads too.
	reloaderAutoAnnotation = "reloader.stakater.com/auto"
)

func namespaceName(i int) string { return fmt.Sprintf("bench-%02d", i) }
func secretName(i int) string    { return fmt.Sprintf("s-%03d", i) }
func configMapName(i int) string { return fmt.Sprintf("cm-%02d", i) }
func deploymentName(i int) string {
	return fmt.Sprintf("d-%02d", i)
}
func sharedDeploymentName(i int) string { return fmt.Sprintf("sh-%02d", i) }

// workload names one Deployment of the profile and what it reads.
type workload struct {
	Namespace, Name, ConfigMap, Secret string
}

func (w workload) key() string { return w.Namespace + "/" + w.Name }

// workloads returns the Deployments that read their own ConfigMap and
// Secret, in an order that visits every namespace before reusing one.
func (p profile) workloads() []workload {
	var out []workload
	for i := range p.DeploymentsPerNamespace {
		for n := range p.Namespaces {
			out = append(out, workload{Namespace: namespaceName(n), Name: deploymentName(i), ConfigMap: configMapName(i), Secret: secretName(i)})
		}
	}
	return out
}

func (p profile) sharedWorkloads() []workload {
	var out []workload
	for i := range p.SharedDeployments {
		w := workload{Namespace: sharedNamespace, Name: sharedDeploymentName(i), ConfigMap: sharedConfigMap}
		if p.SharedSecret {
			w.Secret = sharedSecret
		}
		out = append(out, w)
	}
	return out
}

func (p profile) totalDeployments() int {
	return p.Namespaces*p.DeploymentsPerNamespace + p.SharedDeployments
}

func deploymentObject(w workload, optIn string) *appsv1.Deployment {
	if optIn == "" {
		optIn = autoAnnotation
	}
	labels := map[string]string{"app": w.Name}
	c := corev1.Container{
		Name:  "app",
		Image: "registry.example/app:1",
		EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: w.ConfigMap},
		}}},
	}
	if w.Secret != "" {
		c.Env = []corev1.EnvVar{{Name: "SECRET", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: w.Secret}, Key: secretKey,
		}}}}
	}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: w.Namespace, Name: w.Name, Annotations: map[string]string{optIn: "true"}},
		Spec: appsv1.DeploymentSpec{
			// No pods: the bench measures Reroll's patches, not the
			// Deployment controller and kubelets rolling pods.
			Replicas: ptr.To[int32](0),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{c}},
			},
		},
	}
}

func configMapObject(ns, name string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Data:       map[string]string{configKey: "info", "FEATURE_FLAGS": "a,b,c", "GREETING": "hello from " + ns + "/" + name},
	}
}

// create makes every object of the profile with workers concurrent
// requests, Secrets and ConfigMaps before the Deployments that read them.
func (p profile) create(ctx context.Context, cs kubernetes.Interface, workers int) (int, error) {
	var jobs []func() error
	rng := rand.New(rand.NewChaCha8([32]byte{}))
	namespaces := []string{sharedNamespace}
	for n := range p.Namespaces {
		namespaces = append(namespaces, namespaceName(n))
	}
	for _, ns := range namespaces {
		if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			return 0, fmt.Errorf("creating namespace %s: %w", ns, err)
		}
	}
	for n := range p.Namespaces {
		ns := namespaceName(n)
		for i := range p.SecretsPerNamespace {
			value := make([]byte, p.SecretSize)
			for j := range value {
				value[j] = byte(rng.Uint32())
			}
			s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: secretName(i)}, Data: map[string][]byte{secretKey: value}}
			jobs = append(jobs, func() error {
				_, err := cs.CoreV1().Secrets(ns).Create(ctx, s, metav1.CreateOptions{})
				return err
			})
		}
		for i := range p.ConfigMapsPerNamespace {
			cm := configMapObject(ns, configMapName(i))
			jobs = append(jobs, func() error {
				_, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{})
				return err
			})
		}
	}
	if p.SharedSecret {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: sharedNamespace, Name: sharedSecret}, Data: map[string][]byte{secretKey: make([]byte, p.SecretSize)}}
		jobs = append(jobs, func() error {
			_, err := cs.CoreV1().Secrets(sharedNamespace).Create(ctx, s, metav1.CreateOptions{})
			return err
		})
	}
	cm := configMapObject(sharedNamespace, sharedConfigMap)
	jobs = append(jobs, func() error {
		_, err := cs.CoreV1().ConfigMaps(sharedNamespace).Create(ctx, cm, metav1.CreateOptions{})
		return err
	})
	if err := runJobs(jobs, workers); err != nil {
		return 0, err
	}
	count := len(jobs)
	jobs = nil
	for _, w := range append(p.workloads(), p.sharedWorkloads()...) {
		d := deploymentObject(w, p.OptIn)
		jobs = append(jobs, func() error {
			_, err := cs.AppsV1().Deployments(d.Namespace).Create(ctx, d, metav1.CreateOptions{})
			return err
		})
	}
	return count + len(jobs) + len(namespaces), runJobs(jobs, workers)
}

// runJobs runs jobs on workers goroutines and returns the first error.
func runJobs(jobs []func() error, workers int) error {
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= len(jobs) {
					return
				}
				if err := jobs[i](); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// since is a short duration for tables.
func since(t time.Time) time.Duration { return time.Since(t).Round(time.Millisecond) }

// references are the references of every Deployment of the profile: one
// ConfigMap each, and one Secret each but the shared ones without
// SharedSecret.
func (p profile) references() references {
	r := references{ConfigMaps: p.totalDeployments(), Secrets: p.Namespaces * p.DeploymentsPerNamespace}
	if p.SharedSecret {
		r.Secrets += p.SharedDeployments
	}
	return r
}
