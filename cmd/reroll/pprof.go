package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
)

// pprofServer serves Go's net/http/pprof handlers under /debug/pprof/ on
// addr, for --enable-pprof (Reloader's flag; off by default, since a
// profile reveals memory contents to whoever can reach the port). It runs
// on every replica, leader or not, and stops with the manager.
type pprofServer struct {
	addr string
}

// NeedLeaderElection reports false: a standby is worth profiling too.
func (p pprofServer) NeedLeaderElection() bool { return false }

// Start listens on p.addr and serves until ctx ends. A port already in use
// is an error that stops the manager, as with the metrics address.
func (p pprofServer) Start(ctx context.Context) error {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	ln, err := net.Listen("tcp", p.addr)
	if err != nil {
		return fmt.Errorf("--pprof-addr: listening on %s: %w", p.addr, err)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	ctrl.LoggerFrom(ctx).Info("Serving pprof", "address", ln.Addr().String())
	select {
	case err := <-done:
		return fmt.Errorf("serving pprof: %w", err)
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("stopping the pprof server: %w", err)
	}
	return nil
}
