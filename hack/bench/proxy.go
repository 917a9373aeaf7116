package main

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// countingProxy is a plain-HTTP reverse proxy on loopback in front of the
// API server. It counts every request a controller makes, by verb and
// resource as the API server itself classifies them (its
// RequestInfoFactory), so that two controllers are counted by one
// instrument, whatever metrics each exports. It adds the admin credentials
// of the plane: the controller's kubeconfig has none.
type countingProxy struct {
	srv  *http.Server
	ln   net.Listener
	info *request.RequestInfoFactory

	mu     sync.Mutex
	counts apiRequests
	// started counts requests as they arrive (the quiet test).
	started int
}

// startCountingProxy starts a proxy to the API server of cfg on a free
// loopback port.
func startCountingProxy(cfg *rest.Config) (*countingProxy, error) {
	target, err := url.Parse(cfg.Host)
	if err != nil {
		return nil, fmt.Errorf("parsing the API server's address: %w", err)
	}
	rt, err := rest.TransportFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("the API server's transport: %w", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &countingProxy{
		ln:     ln,
		counts: apiRequests{},
		info:   &request.RequestInfoFactory{APIPrefixes: sets.NewString("api", "apis"), GrouplessAPIPrefixes: sets.NewString("api")},
	}
	rp := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(target)
			r.Out.Host = target.Host
		},
		Transport: rt,
		// Watches stream: pass every event on at once.
		FlushInterval: -1,
	}
	p.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := p.classify(r)
		p.mu.Lock()
		p.started++
		p.mu.Unlock()
		rp.ServeHTTP(&countingWriter{ResponseWriter: w, count: func(code int) { p.count(key, code) }}, r)
	})}
	go func() { _ = p.srv.Serve(ln) }()
	return p, nil
}

// classify returns "verb resource" (resource/subresource when there is
// one), or "verb (discovery)" for a request that names no resource, as
// requestsOf names Reroll's own metric.
func (p *countingProxy) classify(r *http.Request) string {
	ri, err := p.info.NewRequestInfo(r)
	if err != nil || !ri.IsResourceRequest {
		return strings.ToLower(r.Method) + " (discovery)"
	}
	res := ri.Resource
	if ri.Subresource != "" {
		res += "/" + ri.Subresource
	}
	return ri.Verb + " " + res
}

func (p *countingProxy) count(key string, code int) {
	if code < 200 || code > 299 {
		key += " code=" + strconv.Itoa(code)
	}
	p.mu.Lock()
	p.counts[key]++
	p.mu.Unlock()
}

// requests returns the requests answered so far.
func (p *countingProxy) requests() (apiRequests, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := apiRequests{}
	for k, v := range p.counts {
		out[k] = v
	}
	return out, nil
}

// arrived is how many requests have arrived so far, answered or not.
func (p *countingProxy) arrived() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.started
}

// writeKubeconfig writes a kubeconfig that points at the proxy.
func (p *countingProxy) writeKubeconfig(path string) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["bench"] = &clientcmdapi.Cluster{Server: "http://" + p.ln.Addr().String()}
	cfg.AuthInfos["bench"] = &clientcmdapi.AuthInfo{}
	cfg.Contexts["bench"] = &clientcmdapi.Context{Cluster: "bench", AuthInfo: "bench", Namespace: "default"}
	cfg.CurrentContext = "bench"
	return clientcmd.WriteToFile(*cfg, path)
}

func (p *countingProxy) stop() { _ = p.srv.Close() }

// countingWriter calls count with the answer's status code once, when the
// header is written (a watch's header comes first, its end much later).
type countingWriter struct {
	http.ResponseWriter
	count   func(code int)
	counted bool
}

func (w *countingWriter) WriteHeader(code int) {
	if !w.counted {
		w.counted = true
		w.count(code)
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *countingWriter) Write(b []byte) (int, error) {
	if !w.counted {
		w.WriteHeader(http.StatusOK)
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets the reverse proxy flush the underlying writer.
func (w *countingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
