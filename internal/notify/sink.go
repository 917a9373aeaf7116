package notify

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/reroll/reroll/internal/change"
)

// Sink is the kind of endpoint a Sender posts to, which decides the body of
// the POST: one of ALERT_SINK's, or Endpoint.
type Sink string

// The sinks of Reloader's ALERT_SINK.
const (
	// Webhook posts a JSON object with the alert's fields (Reloader's
	// default).
	Webhook Sink = "webhook"
	// Slack posts {"text": ...} to a Slack incoming webhook.
	Slack Sink = "slack"
	// Teams posts a MessageCard to a Microsoft Teams incoming webhook.
	Teams Sink = "teams"
	// GChat posts {"text": ...} to a Google Chat space webhook.
	GChat Sink = "gchat"
	// Endpoint posts the change itself, hashes included, to the
	// notification endpoint of --webhook-url; not an ALERT_SINK value.
	Endpoint Sink = "endpoint"
)

// ParseSink reads ALERT_SINK. Empty means Webhook, as in Reloader; case and
// surrounding spaces are ignored.
func ParseSink(s string) (Sink, error) {
	switch v := Sink(strings.ToLower(strings.TrimSpace(s))); v {
	case "":
		return Webhook, nil
	case Webhook, Slack, Teams, GChat:
		return v, nil
	default:
		return "", fmt.Errorf("unknown sink %q (want slack, teams, gchat or webhook)", s)
	}
}

// Text is the message a person reads: the workload, the change's one text
// form and, on a line of its own, the additional information
// (ALERT_ADDITIONAL_INFO).
func Text(c change.Change, info string) string {
	text := fmt.Sprintf("Reroll rolled %s after %s", c.Workload(), c.Summary())
	if h := c.Halt; h != nil {
		text = fmt.Sprintf("Reroll halted change set %s (%s) after %d failed rollout(s): %s; workloads not yet rolled keep their pods until kubectl reroll resume, or a newer content",
			h.ChangeSet, c.Summary(), len(h.Failed), h.Signal)
	}
	if inv := c.Invalid; inv != nil {
		text = fmt.Sprintf("Reroll held %s after %s: the new content fails validation: %s; nothing rolls for it until the content changes to content that passes",
			c.Workload(), c.Summary(), strings.Join(inv.Findings, "; "))
	}
	if info = strings.TrimSpace(info); info != "" {
		text += "\n" + info
	}
	return text
}

// summary is the one line a Teams card shows folded.
func summary(c change.Change) string {
	if c.Halt != nil {
		return "Reroll halted change set " + c.Halt.ChangeSet
	}
	if c.Invalid != nil {
		return "Reroll held " + c.Workload() + ": invalid content"
	}
	return "Reroll rolled " + c.Workload()
}

// webhookBody is the JSON object posted to a raw webhook.
type webhookBody struct {
	change.Change
	// AdditionalInfo is ALERT_ADDITIONAL_INFO, omitted when empty.
	AdditionalInfo string `json:"additionalInfo,omitempty"`
	// Text is Text, for receivers that only show a message.
	Text string `json:"text"`
}

// messageCard is the legacy Office 365 connector card, the format Teams
// incoming webhooks accept; text alone is enough for it to render.
type messageCard struct {
	Type    string `json:"@type"`
	Context string `json:"@context"`
	Summary string `json:"summary"`
	Text    string `json:"text"`
}

// Body returns the JSON body of the POST for the sink: for Endpoint the
// change as it is; for the alert sinks its alert form (change.Change.Alert)
// with its text and info (ALERT_ADDITIONAL_INFO).
func Body(sink Sink, a change.Change, info string) ([]byte, error) {
	if sink == Endpoint {
		b, err := json.Marshal(a)
		if err != nil {
			return nil, fmt.Errorf("encoding the notification: %w", err)
		}
		return b, nil
	}
	a = a.Alert()
	text := Text(a, info)
	var v any
	switch sink {
	case Slack, GChat:
		v = map[string]string{"text": text}
	case Teams:
		// Teams renders text as Markdown, where a single newline is not a
		// line break.
		v = messageCard{Type: "MessageCard", Context: "https://schema.org/extensions",
			Summary: summary(a),
			Text:    strings.ReplaceAll(text, "\n", "\n\n")}
	case Webhook, "":
		v = webhookBody{Change: a, AdditionalInfo: strings.TrimSpace(info), Text: text}
	default:
		return nil, fmt.Errorf("unknown sink %q", sink)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encoding the %s alert: %w", sink, err)
	}
	return b, nil
}
