// Package controlplane starts a real Kubernetes control plane on 127.0.0.1
// from local binaries, without containers: etcd and kube-apiserver, and, when
// asked for a full plane, kube-controller-manager, kube-scheduler and kwok
// with one fake Node, so that Deployments, StatefulSets and DaemonSets really
// roll out (kwok marks the scheduled pods Running and Ready).
//
// The test suites use it to run Reroll against the same API server a cluster
// has, and hack/controlplane uses it for `make cluster-up` and
// `make cluster-down`. The binaries come from bin/, built by hack/tools.sh at
// the versions in hack/tools/versions.env.
//
// Every plane picks free ports when it starts and keeps its state (PKI,
// kubeconfigs, etcd data, logs and the pids file) in one folder, so two planes
// can run side by side, for example two test packages run in parallel.
package controlplane
