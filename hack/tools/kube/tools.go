//go:build tools

// Package kube pins the Kubernetes binaries that the local control plane
// runs (kube-apiserver, kube-controller-manager and kube-scheduler v1.32.4)
// and the kubectl that `make demo` uses. It is never compiled into Reroll;
// hack/tools.sh builds the commands below from this module.
package kube

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubectl"
)
