package notify

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/reroll/reroll/internal/redact"
)

// Payload is the JSON body POSTed for one workload.
type Payload struct {
	// Kind, Namespace and Name identify the workload.
	Kind      string `json:"kind"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Changes lists the ConfigMaps and Secrets whose consumed data changed.
	Changes []Change `json:"changes"`
	// Hash is the SHA-256 over everything the workload consumes, the value
	// reroll.dev/config-hash would have taken (lowercase hex).
	Hash string `json:"hash"`
	// ObservedAt is when Reroll saw the change, in Unix seconds.
	ObservedAt int64 `json:"observedAt"`
}

// Change is one ConfigMap or Secret in a Payload. It never holds values.
type Change struct {
	// Kind is "ConfigMap" or "Secret"; Name is the object's name.
	Kind string `json:"kind"`
	Name string `json:"name"`
	// Keys lists the consumed keys that changed; empty when the object was
	// created or deleted.
	Keys []string `json:"keys,omitempty"`
	// Created and Deleted are set when the object appeared or disappeared.
	Created bool `json:"created,omitempty"`
	Deleted bool `json:"deleted,omitempty"`
	// Hash is Reloader's SHA-1 of the object's data (lowercase hex); the
	// SHA-1 of nothing for a deleted object.
	Hash string `json:"hash"`
}

// Client posts payloads.
type Client struct {
	// URL receives the POSTs.
	URL string
	// HTTP sends them; a nil HTTP uses a client with a 10 second timeout.
	HTTP *http.Client
}

// Post sends p as JSON. It returns an error when the request cannot be made
// or the server answers with a status outside 2xx; the caller retries.
func (c *Client) Post(ctx context.Context, p Payload) error {
	body, err := json.Marshal(p)
	if err != nil {
		return fmt.Errorf("encoding the webhook payload: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.URL, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("building the request to notification endpoint %s: %w", redact.URL(c.URL), redact.Error(err))
	}
	req.Header.Set("Content-Type", "application/json")
	hc := c.HTTP
	if hc == nil {
		hc = &http.Client{Timeout: 10 * time.Second}
	}
	resp, err := hc.Do(req)
	if err != nil {
		// The URL may hold a token: name the scheme and host only.
		return fmt.Errorf("posting to notification endpoint %s: %w", redact.URL(c.URL), redact.Error(err))
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("notification endpoint %s answered %s", redact.URL(c.URL), resp.Status)
	}
	return nil
}
