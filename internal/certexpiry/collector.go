package certexpiry

import (
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
)

// Name is the metric's name.
const Name = "reroll_webhook_certificate_expiry_timestamp_seconds"

var desc = prometheus.NewDesc(Name,
	"When the admission webhook's serving certificate (tls.crt in --webhook-cert-dir) expires, in seconds since the Unix epoch; absent while the file cannot be read.", nil, nil)

// Collector reads the certificate of Dir at each scrape.
type Collector struct {
	// Dir holds tls.crt, the PEM serving certificate (leaf first).
	Dir string
	// Log receives the error of a file that cannot be read or parsed.
	Log logr.Logger
}

// Describe implements prometheus.Collector.
func (c Collector) Describe(ch chan<- *prometheus.Desc) { ch <- desc }

// Collect implements prometheus.Collector: one sample, the NotAfter of the
// first certificate of tls.crt, or none (and a log line) when it cannot be
// read, which an alert on absence catches.
func (c Collector) Collect(ch chan<- prometheus.Metric) {
	notAfter, err := NotAfter(filepath.Join(c.Dir, "tls.crt"))
	if err != nil {
		c.Log.V(1).Info("Cannot read the webhook certificate for its expiry metric", "error", err.Error())
		return
	}
	ch <- prometheus.MustNewConstMetric(desc, prometheus.GaugeValue, float64(notAfter.Unix()))
}

// NotAfter returns the expiry of the first certificate of the PEM file at
// path; an error names the path.
func NotAfter(path string) (time.Time, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return time.Time{}, fmt.Errorf("reading the webhook certificate: %w", err)
	}
	block, _ := pem.Decode(b)
	if block == nil || block.Type != "CERTIFICATE" {
		return time.Time{}, fmt.Errorf("webhook certificate %s: %w", path, errors.New("no PEM CERTIFICATE block"))
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return time.Time{}, fmt.Errorf("webhook certificate %s: %w", path, err)
	}
	return cert.NotAfter, nil
}
