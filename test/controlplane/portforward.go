package controlplane

import (
	"context"
	"fmt"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
)

// clusterPortForwardKind is kwok's kind (kwok.x-k8s.io/v1alpha1) that says
// where kwok's server sends a port-forward to the pods it selects.
const clusterPortForwardKind = "ClusterPortForward"

// ClusterPortForwardGroupVersion and ClusterPortForwardResource name kwok's
// ClusterPortForward API in a full plane. An object of it, cluster-scoped,
// sends `kubectl port-forward` of the selected kwok pods to a local address:
//
//	spec:
//	  selector: {matchNamespaces: [NS], matchNames: [POD]}   # both optional
//	  forwards:
//	  - ports: [9090]                                         # the pod's port; empty: any
//	    target: {address: 127.0.0.1, port: 41234}             # where the stream goes
//
// kwok watches these objects; a new one takes effect within a second or so.
const (
	ClusterPortForwardGroupVersion = "kwok.x-k8s.io/v1alpha1"
	ClusterPortForwardResource     = "clusterportforwards"
)

// installPortForwardCRD creates the CustomResourceDefinition of kwok's
// ClusterPortForward, which kwok reads with --enable-crds, and waits until
// it is served. The schema keeps any field: kwok validates what it reads.
func installPortForwardCRD(ctx context.Context, cfg *rest.Config) error {
	cs, err := apiextensionsclient.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("create apiextensions client: %w", err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: ClusterPortForwardResource + ".kwok.x-k8s.io"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "kwok.x-k8s.io",
			Names: apiextensionsv1.CustomResourceDefinitionNames{
				Kind: clusterPortForwardKind, ListKind: clusterPortForwardKind + "List",
				Plural: ClusterPortForwardResource, Singular: "clusterportforward",
			},
			Scope: apiextensionsv1.ClusterScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1alpha1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", XPreserveUnknownFields: ptr.To(true),
				}},
				Subresources: &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}},
			}},
		},
	}
	if _, err := cs.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, crd, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create the CRD %s: %w", crd.Name, err)
	}
	err = wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		got, err := cs.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, crd.Name, metav1.GetOptions{})
		if err != nil {
			return false, nil //nolint:nilerr // retried until ctx ends
		}
		for _, c := range got.Status.Conditions {
			if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("wait for the CRD %s to be established: %w", crd.Name, err)
	}
	return nil
}
