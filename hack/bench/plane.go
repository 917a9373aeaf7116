package main

import (
	"context"
	"path/filepath"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/reroll/reroll/test/controlplane"
)

// startPlane starts etcd and kube-apiserver, the repository's binaries, in
// dir/plane (prefix, when set, starts the log line: a contender's name;
// full adds kube-controller-manager, kube-scheduler and kwok),
// and returns the plane with the bench's own client: fast creates, and
// protobuf to spare the API server's CPU. The caller stops the plane
// (stopPlane).
func startPlane(ctx context.Context, dir, prefix string, full bool) (*controlplane.Plane, *rest.Config, *kubernetes.Clientset, error) {
	root, err := controlplane.RepoRoot()
	if err != nil {
		return nil, nil, nil, err
	}
	bins, err := controlplane.BinariesFrom(root)
	if err != nil {
		return nil, nil, nil, err
	}
	what := "etcd and kube-apiserver"
	if full {
		what = "the full control plane"
	}
	logf("%sstarting %s in %s", prefix, what, filepath.Join(dir, "plane"))
	plane, err := controlplane.Start(ctx, controlplane.Options{Binaries: bins, Dir: filepath.Join(dir, "plane"), Full: full})
	if err != nil {
		return nil, nil, nil, err
	}
	cfg := rest.CopyConfig(plane.Config)
	cfg.QPS, cfg.Burst = 500, 1000
	cfg.ContentType = "application/vnd.kubernetes.protobuf"
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		stopPlane(plane)
		return nil, nil, nil, err
	}
	return plane, cfg, cs, nil
}

// stopPlane stops the plane, logging a failure.
func stopPlane(plane *controlplane.Plane) {
	if err := plane.Stop(); err != nil {
		logf("stopping the control plane: %v", err)
	}
}
