package cli

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	rerollv1alpha1 "github.com/reroll/reroll/api/v1alpha1"
	"github.com/reroll/reroll/internal/digest"
	"github.com/reroll/reroll/internal/pin"
	"github.com/reroll/reroll/internal/plan"
	"github.com/reroll/reroll/internal/reference"
	"github.com/reroll/reroll/internal/workload"
)

// session is one command's view of the cluster: an uncached client with the
// user's credentials, the namespace the flags chose and Reroll's settings.
type session struct {
	client client.Client
	config *rest.Config
	mapper meta.RESTMapper
	// namespace is -n, or the kubeconfig context's; "" with -A.
	namespace string
	// planOptions are the planner's options for Reroll's settings: how it reads
	// annotations, --reload-on-create and --reload-on-delete, and its
	// installation time (zero when unknown, and then a workload Reroll has
	// not recorded yet is predicted not to roll; loadInstalledAt).
	planOptions plan.Options
	settings    Settings
	// objects caches the ConfigMaps and Secrets read, as digests.
	objects *objects
	// health watches the client's answers (verdict).
	health *apiHealth
	// installedLoaded is set once loadInstalledAt has run.
	installedLoaded bool
	// baselines caches the data of Reroll's baseline ConfigMap of each
	// namespace read (storedBaseline); baselineNote says why one could
	// not be read, "" when all could.
	baselines    map[string]map[string]string
	baselineNote string
	// opts are the command's options; ctrl is the controller discover
	// found (nil when none), discovered whether it ran.
	opts       *Options
	ctrl       *rerollController
	discovered bool
}

// loadInstalledAt reads Reroll's installation time from the data key
// "installed-at" of the installation ConfigMap (Settings.Installation,
// which Reroll writes at start: --installation-configmap), once per
// session: the controller's first-sight rule depends on it. It never reads
// the digest key Secret, whose readers could sign Reroll's state. It
// returns a note for the user when the time cannot be known, else "".
func (s *session) loadInstalledAt(ctx context.Context) string {
	if s.installedLoaded {
		return ""
	}
	s.installedLoaded = true
	ns, name, ok := strings.Cut(s.settings.Installation, "/")
	if !ok || ns == "" || name == "" {
		return fmt.Sprintf("--installation %q is not NAMESPACE/NAME: Reroll's installation time is unknown, so a workload Reroll has not recorded yet is shown as not rolling", s.settings.Installation)
	}
	var cm corev1.ConfigMap
	if err := s.client.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &cm); err != nil {
		return fmt.Sprintf("could not read Reroll's installation time from ConfigMap %s/%s (%v): a workload Reroll has not recorded yet is shown as not rolling", ns, name, readError(err))
	}
	at, err := time.Parse(time.RFC3339, cm.Data[installedAtData])
	if err != nil {
		return fmt.Sprintf("ConfigMap %s/%s has no valid data key %s: a workload Reroll has not recorded yet is shown as not rolling", ns, name, installedAtData)
	}
	s.planOptions.InstalledAt = at
	return ""
}

// installedAtData is the data key of the installation ConfigMap
// (state.InstallationInstalledAtData; the plugin does not import the
// controller).
const installedAtData = "installed-at"

// newSession connects with the flags in o.
func newSession(o *Options) (*session, error) {
	cfg, err := o.ConfigFlags.ToRESTConfig()
	if err != nil {
		return nil, fmt.Errorf("loading the Kubernetes client configuration: %w", err)
	}
	if err := preflight(cfg); err != nil {
		return nil, err
	}
	health := &apiHealth{host: cfg.Host}
	cfg = rest.CopyConfig(cfg)
	cfg.Wrap(health.wrap)
	mapper, err := o.ConfigFlags.ToRESTMapper()
	if err != nil {
		return nil, fmt.Errorf("discovering the API: %w", err)
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, fmt.Errorf("building the scheme: %w", err)
	}
	if err := rerollv1alpha1.AddToScheme(scheme); err != nil {
		return nil, fmt.Errorf("building the scheme: %w", err)
	}
	if err := apiextensionsv1.AddToScheme(scheme); err != nil {
		return nil, fmt.Errorf("building the scheme: %w", err)
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme, Mapper: mapper})
	if err != nil {
		return nil, fmt.Errorf("creating the client: %w", err)
	}
	ns, _, err := o.ConfigFlags.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return nil, fmt.Errorf("reading the namespace from the kubeconfig: %w", err)
	}
	if o.AllNamespaces {
		ns = ""
	}
	cfgAnn, err := o.Settings.annotations()
	if err != nil {
		return nil, err
	}
	return &session{client: c, config: cfg, mapper: mapper, namespace: ns, planOptions: o.Settings.planOptions(cfgAnn), settings: o.Settings,
		objects: &objects{c: c, read: map[objectKey]objectState{}}, health: health, opts: o}, nil
}

// kinds returns the workload kinds Reroll handles that the API server
// serves: the built-in ones, CronJobs, Jobs, and Argo Rollouts and OpenShift
// DeploymentConfigs where installed.
func (s *session) kinds() []workload.Kind {
	out := append(workload.Builtin(), workload.CronJob{}, workload.Job{})
	for _, u := range []workload.Unstructured{workload.ArgoRollout(), workload.DeploymentConfig()} {
		if _, err := s.mapper.RESTMapping(u.GVK.GroupKind(), u.GVK.Version); err == nil {
			out = append(out, u)
		}
	}
	return out
}

// kindFor returns the workload kind a user's KIND names ("deploy",
// "deployments", "Rollout", ...), resolved through the API server's
// short names.
func (s *session) kindFor(name string) (workload.Kind, error) {
	gvr, err := s.mapper.ResourceFor(schemaResource(name))
	if err != nil {
		return nil, fmt.Errorf("unknown kind %q: %w", name, err)
	}
	gvk, err := s.mapper.KindFor(gvr)
	if err != nil {
		return nil, fmt.Errorf("unknown kind %q: %w", name, err)
	}
	for _, k := range s.kinds() {
		obj := k.New()
		kgvk, err := apiutil.GVKForObject(obj, s.client.Scheme())
		if u, ok := obj.(*unstructured.Unstructured); ok {
			kgvk, err = u.GroupVersionKind(), nil
		}
		if err == nil && kgvk.GroupKind() == gvk.GroupKind() {
			return k, nil
		}
	}
	return nil, fmt.Errorf("%s is not a workload kind Reroll rolls (Deployment, StatefulSet, DaemonSet, CronJob, Job, Rollout, DeploymentConfig)", gvk.Kind)
}

// workloads lists every object of the kinds in namespace ("" for all).
// A kind the user may not list is skipped and named in the returned notes.
func (s *session) workloads(ctx context.Context, namespace string) ([]target, []string, error) {
	var out []target
	var notes []string
	for _, k := range s.kinds() {
		list := k.NewList()
		if err := s.client.List(ctx, list, client.InNamespace(namespace)); err != nil {
			if apierrors.IsForbidden(err) {
				notes = append(notes, fmt.Sprintf("could not list %ss: forbidden", k.Name()))
				continue
			}
			return nil, nil, fmt.Errorf("listing %ss: %w", k.Name(), err)
		}
		items, err := meta.ExtractList(list)
		if err != nil {
			return nil, nil, fmt.Errorf("reading the list of %ss: %w", k.Name(), err)
		}
		for _, item := range items {
			obj, ok := item.(client.Object)
			if !ok {
				continue
			}
			if f, ok := k.(workload.Filter); ok && !f.Handles(obj) {
				continue
			}
			t, err := s.target(ctx, k, obj)
			if err != nil {
				notes = append(notes, err.Error())
				continue
			}
			out = append(out, t)
		}
	}
	return out, notes, nil
}

// workload reads one workload.
func (s *session) workload(ctx context.Context, k workload.Kind, namespace, name string) (target, error) {
	obj := k.New()
	if err := s.client.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, obj); err != nil {
		return target{}, fmt.Errorf("reading %s %s/%s: %w", k.Name(), namespace, name, err)
	}
	return s.target(ctx, k, obj)
}

// target pairs a workload with its pod template (the referenced one for an
// Argo Rollout with workloadRef).
func (s *session) target(ctx context.Context, k workload.Kind, obj client.Object) (target, error) {
	var t *corev1.PodTemplateSpec
	var err error
	if tr, ok := k.(workload.TemplateReader); ok {
		t, err = tr.ReadPodTemplate(ctx, s.client, obj)
	} else {
		t, err = k.PodTemplate(obj)
	}
	if err != nil {
		return target{}, fmt.Errorf("reading the pod template of %s %s/%s: %w", k.Name(), obj.GetNamespace(), obj.GetName(), err)
	}
	pins := pinsOf(t)
	if len(pins) > 0 {
		t = t.DeepCopy()
		pin.Rewrite(&t.Spec, pins)
	}
	return target{kind: k, obj: obj, template: t, pins: pins}, nil
}

// pinsOf returns the copies t names, each to its source, as its
// pin.TemplateAnnotation lists them: only names t references, each of the
// form of a copy of its source. The plugin holds no installation key to
// verify a copy's signature: what it shows of pins is the template's word,
// which the controller checks before it acts.
func pinsOf(t *corev1.PodTemplateSpec) map[pin.Ref]string {
	claims, err := pin.ParsePins(t.Annotations[pin.TemplateAnnotation])
	if err != nil || len(claims) == 0 {
		return nil
	}
	cms, secrets := pin.Referenced(&t.Spec)
	out := map[pin.Ref]string{}
	for src, c := range claims {
		named := cms
		if src.Kind == reference.Secret {
			named = secrets
		}
		if slices.Contains(named, c) {
			out[pin.Ref{Kind: src.Kind, Name: c}] = src.Name
		}
	}
	return out
}

// refOf names obj for -o name: its kind from the scheme, or its own for an
// unstructured object.
func (s *session) refOf(obj client.Object) objectRef {
	gvk := obj.GetObjectKind().GroupVersionKind()
	if gvk.Empty() {
		gvk, _ = apiutil.GVKForObject(obj, s.client.Scheme())
	}
	return objectRef{gvk: gvk, namespace: obj.GetNamespace(), name: obj.GetName()}
}

// target is one workload and the pod template its pods run.
type target struct {
	kind     workload.Kind
	obj      client.Object
	template *corev1.PodTemplateSpec
	// pins are the copies (versioned config) the workload's own pod
	// template names, each to its source (pinsOf); template is then the
	// template seen through them, naming the sources, as the controller
	// sees it.
	pins map[pin.Ref]string
}

// String returns "Kind namespace/name".
func (t target) String() string {
	return t.kind.Name() + " " + t.obj.GetNamespace() + "/" + t.obj.GetName()
}

// objectKey names one ConfigMap or Secret.
type objectKey struct {
	kind            reference.Kind
	namespace, name string
}

func (k objectKey) String() string { return string(k.kind) + "/" + k.name }

// objectState is what the plugin knows of one ConfigMap or Secret: what
// Reroll's cache would hold (digests, never values).
type objectState struct {
	// known is false when the object could not be read; err says why.
	known bool
	err   error
	// exists is false for an object that is not there.
	exists      bool
	annotations map[string]string
	// labels count only for whether an apply writes the object.
	labels map[string]string
	data   digest.Data
	// uid and resourceVersion identify the version (pod-reloader's dialect).
	uid, resourceVersion string
	// history is when it was created and its data last changed, for the
	// first-sight rule (plan.History).
	history plan.History
}

// objects reads ConfigMaps and Secrets once each, keeping digests only.
type objects struct {
	c    client.Reader
	read map[objectKey]objectState
	// selector is the controller's --resource-label-selector: an object
	// it does not select is absent to the controller; nil selects all.
	selector labels.Selector
	// overlay holds plan's manifests, which replace what is read.
	overlay map[objectKey]objectState
}

// get returns the state of one object: the overlay's, else the API's. A
// read the user is not allowed is a state with known false, not an error.
func (o *objects) get(ctx context.Context, k objectKey) objectState {
	if st, ok := o.overlay[k]; ok {
		if st.exists && o.selector != nil && !o.selector.Matches(labels.Set(st.labels)) {
			return objectState{known: true}
		}
		return st
	}
	st := o.live(ctx, k)
	if st.exists && o.selector != nil && !o.selector.Matches(labels.Set(st.labels)) {
		// Outside --resource-label-selector: the controller never sees it.
		return objectState{known: true}
	}
	return st
}

// live returns the state of the object in the cluster, ignoring the overlay.
func (o *objects) live(ctx context.Context, k objectKey) objectState {
	if st, ok := o.read[k]; ok {
		return st
	}
	var obj client.Object = &corev1.ConfigMap{}
	if k.kind == reference.Secret {
		obj = &corev1.Secret{}
	}
	st := objectState{known: true}
	err := o.c.Get(ctx, types.NamespacedName{Namespace: k.namespace, Name: k.name}, obj)
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		st = objectState{err: readError(err)}
	default:
		// What Reroll's cache keeps: digests in place of values, without
		// the last-applied-configuration annotation (a copy of the data).
		st.exists = true
		st.data, _ = digest.Of(obj)
		st.annotations, st.labels = withoutLastApplied(obj.GetAnnotations()), obj.GetLabels()
		st.uid, st.resourceVersion = string(obj.GetUID()), obj.GetResourceVersion()
		st.history = historyOf(obj)
	}
	o.read[k] = st
	return st
}

// names returns the names of the objects of kind in namespace, live and
// overlaid, for list annotations that are patterns. The error wraps
// errForbidden when the user may not list them.
func (o *objects) names(ctx context.Context, kind reference.Kind, namespace string) (names []string, err error) {
	seen := map[string]bool{}
	for k, st := range o.overlay {
		if o.selector != nil && !o.selector.Matches(labels.Set(st.labels)) {
			continue
		}
		if k.kind == kind && k.namespace == namespace && !seen[k.name] {
			seen[k.name] = true
			names = append(names, k.name)
		}
	}
	// Metadata only: the names are all a pattern needs.
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind(string(kind) + "List"))
	opts := []client.ListOption{client.InNamespace(namespace)}
	if o.selector != nil {
		opts = append(opts, client.MatchingLabelsSelector{Selector: o.selector})
	}
	if err := o.c.List(ctx, list, opts...); err != nil {
		return names, readError(err)
	}
	for _, it := range list.Items {
		if !seen[it.Name] {
			seen[it.Name] = true
			names = append(names, it.Name)
		}
	}
	return names, nil
}

// errForbidden stands for any permission the user lacks: the plugin says
// what it could not read and does not guess.
var errForbidden = errors.New("forbidden")

// readError shortens an API error for a person: "forbidden" for a missing
// permission, else the error.
func readError(err error) error {
	if apierrors.IsForbidden(err) {
		return errForbidden
	}
	return err
}

// schemaResource turns a user's "deploy" or "deployments.apps" into a
// partial resource for the RESTMapper.
func schemaResource(s string) (gvr schema.GroupVersionResource) {
	s = strings.ToLower(s)
	if res, group, ok := strings.Cut(s, "."); ok {
		gvr.Resource, gvr.Group = res, group
		return gvr
	}
	gvr.Resource = s
	return gvr
}

// withoutLastApplied returns annotations without kubectl's
// last-applied-configuration, which holds a copy of the object's data.
func withoutLastApplied(annotations map[string]string) map[string]string {
	if _, ok := annotations[corev1.LastAppliedConfigAnnotation]; !ok {
		return annotations
	}
	out := maps.Clone(annotations)
	delete(out, corev1.LastAppliedConfigAnnotation)
	return out
}

// historyOf is what the API says of a live object's past, as the
// controller's store reads it (digest.HistoryOf), its resourceVersion
// bounding the revision of both.
func historyOf(obj client.Object) plan.History {
	created, changed := digest.HistoryOf(obj)
	rv, _ := strconv.ParseUint(obj.GetResourceVersion(), 10, 64)
	h := plan.History{Created: plan.Happened{At: created, ResourceVersion: rv}}
	if !changed.IsZero() {
		h.Changed = plan.Happened{At: changed, ResourceVersion: rv}
	}
	return h
}
