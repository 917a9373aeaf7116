package alert

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Sink is the kind of endpoint ALERT_WEBHOOK_URL points at, which decides
// the body of the POST.
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

// Alert is one rollout to report.
type Alert struct {
	// Kind, Namespace and Name identify the workload that was rolled.
	Kind      string `json:"kind"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Changes are the ConfigMaps and Secrets whose consumed data changed.
	Changes []Change `json:"changes"`
}

// Change is one ConfigMap or Secret of an Alert. It never holds values.
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
}

// String describes the change for a person, as the Rolled Event does.
func (c Change) String() string {
	id := c.Kind + "/" + c.Name
	switch {
	case c.Created:
		return id + " was created"
	case c.Deleted:
		return id + " was deleted"
	case len(c.Keys) == 0:
		return id + " changed"
	}
	return id + " changed keys " + strings.Join(c.Keys, ",")
}

// Text is the message a person reads: the workload, the changes and, on a
// line of its own, the additional information (ALERT_ADDITIONAL_INFO).
func (a Alert) Text(info string) string {
	parts := make([]string, 0, len(a.Changes))
	for _, c := range a.Changes {
		parts = append(parts, c.String())
	}
	text := fmt.Sprintf("Reroll rolled %s %s/%s after %s", a.Kind, a.Namespace, a.Name, strings.Join(parts, "; "))
	if info = strings.TrimSpace(info); info != "" {
		text += "\n" + info
	}
	return text
}

// webhookBody is the JSON object posted to a raw webhook.
type webhookBody struct {
	Alert
	// AdditionalInfo is ALERT_ADDITIONAL_INFO, omitted when empty.
	AdditionalInfo string `json:"additionalInfo,omitempty"`
	// Text is Alert.Text, for receivers that only show a message.
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

// Body returns the JSON body of the POST for the sink.
func Body(sink Sink, a Alert, info string) ([]byte, error) {
	text := a.Text(info)
	var v any
	switch sink {
	case Slack, GChat:
		v = map[string]string{"text": text}
	case Teams:
		// Teams renders text as Markdown, where a single newline is not a
		// line break.
		v = messageCard{Type: "MessageCard", Context: "https://schema.org/extensions",
			Summary: fmt.Sprintf("Reroll rolled %s %s/%s", a.Kind, a.Namespace, a.Name),
			Text:    strings.ReplaceAll(text, "\n", "\n\n")}
	case Webhook, "":
		v = webhookBody{Alert: a, AdditionalInfo: strings.TrimSpace(info), Text: text}
	default:
		return nil, fmt.Errorf("unknown sink %q", sink)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encoding the %s alert: %w", sink, err)
	}
	return b, nil
}
