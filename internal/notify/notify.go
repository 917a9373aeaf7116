package notify

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/reroll/reroll/internal/change"
)

// Client posts payloads.
type Client struct {
	// URL receives the POSTs.
	URL string
	// HTTP sends them; a nil HTTP uses a client with a 10 second timeout.
	HTTP *http.Client
}

// Post sends p as JSON. It returns an error when the request cannot be made
// or the server answers with a status outside 2xx; the caller retries.
func (c *Client) Post(ctx context.Context, p change.Change) error {
	body, err := json.Marshal(p)
	if err != nil {
		return fmt.Errorf("encoding the webhook payload: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.URL, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("building the webhook request to %s: %w", c.URL, err)
	}
	req.Header.Set("Content-Type", "application/json")
	hc := c.HTTP
	if hc == nil {
		hc = &http.Client{Timeout: 10 * time.Second}
	}
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("posting to webhook %s: %w", c.URL, err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("webhook %s answered %s", c.URL, resp.Status)
	}
	return nil
}
