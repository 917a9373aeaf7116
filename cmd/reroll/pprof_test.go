package main

import (
	"context"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/onsi/gomega"
)

func TestPprofServer_ServesProfilesUntilStopped(t *testing.T) {
	g := gomega.NewWithT(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	g.Expect(err).NotTo(gomega.HaveOccurred())
	addr := ln.Addr().String()
	g.Expect(ln.Close()).To(gomega.Succeed())

	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- pprofServer{addr: addr}.Start(ctx) }()
	g.Eventually(func(g gomega.Gomega) {
		resp, err := http.Get("http://" + addr + "/debug/pprof/cmdline")
		g.Expect(err).NotTo(gomega.HaveOccurred())
		defer func() { _ = resp.Body.Close() }()
		g.Expect(resp.StatusCode).To(gomega.Equal(http.StatusOK))
	}).WithTimeout(10 * time.Second).Should(gomega.Succeed())
	cancel()
	g.Eventually(done).WithTimeout(10 * time.Second).Should(gomega.Receive(gomega.BeNil()))
	_, err = http.Get("http://" + addr + "/debug/pprof/cmdline")
	g.Expect(err).To(gomega.HaveOccurred(), "the server stops with the manager")
}

func TestPprofServer_OffByDefault(t *testing.T) {
	g := gomega.NewWithT(t)
	f, _, err := configure(nil, func(string) string { return "" })
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Expect(f.enablePProf).To(gomega.BeFalse())
	g.Expect(f.pprofAddr).To(gomega.Equal(":6060"), "Reloader's default address")
}
