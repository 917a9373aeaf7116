package notify

import (
	"encoding/json"
	"testing"

	"github.com/reroll/reroll/internal/change"
)

func TestBody(t *testing.T) {
	a := change.Change{Kind: "Deployment", Namespace: "shop", Name: "web", Objects: []change.Object{
		{Kind: "ConfigMap", Name: "cfg", Keys: []string{"a", "b"}},
		{Kind: "Secret", Name: "tls", Deleted: true},
	}}
	text := "Reroll rolled Deployment shop/web after ConfigMap/cfg changed keys a,b; Secret/tls was deleted\nCluster: prod"
	cases := map[string]struct {
		sink Sink           // the ALERT_SINK
		want map[string]any // the decoded body
		info string         // ALERT_ADDITIONAL_INFO
	}{
		"slack": {sink: Slack, info: "Cluster: prod", want: map[string]any{"text": text}},
		"gchat": {sink: GChat, info: "Cluster: prod", want: map[string]any{"text": text}},
		"teams": {sink: Teams, info: "Cluster: prod", want: map[string]any{
			"@type": "MessageCard", "@context": "https://schema.org/extensions",
			"summary": "Reroll rolled Deployment shop/web",
			"text":    "Reroll rolled Deployment shop/web after ConfigMap/cfg changed keys a,b; Secret/tls was deleted\n\nCluster: prod",
		}},
		"webhook": {sink: Webhook, info: " Cluster: prod ", want: map[string]any{
			"kind": "Deployment", "namespace": "shop", "name": "web",
			"changes": []any{
				map[string]any{"kind": "ConfigMap", "name": "cfg", "keys": []any{"a", "b"}},
				map[string]any{"kind": "Secret", "name": "tls", "deleted": true},
			},
			"additionalInfo": "Cluster: prod", "text": text,
		}},
		"webhook without info": {sink: Webhook, want: map[string]any{
			"kind": "Deployment", "namespace": "shop", "name": "web",
			"changes": []any{
				map[string]any{"kind": "ConfigMap", "name": "cfg", "keys": []any{"a", "b"}},
				map[string]any{"kind": "Secret", "name": "tls", "deleted": true},
			},
			"text": "Reroll rolled Deployment shop/web after ConfigMap/cfg changed keys a,b; Secret/tls was deleted",
		}},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			b, err := Body(c.sink, a, c.info)
			if err != nil {
				t.Fatal(err)
			}
			var got map[string]any
			if err := json.Unmarshal(b, &got); err != nil {
				t.Fatal(err)
			}
			gb, _ := json.Marshal(got)
			wb, _ := json.Marshal(c.want)
			if string(gb) != string(wb) {
				t.Errorf("Body(%s) = %s, want %s", c.sink, gb, wb)
			}
		})
	}
}

func TestBody_Halt(t *testing.T) {
	a := change.Change{Kind: "Deployment", Namespace: "canary", Name: "web",
		Objects: []change.Object{{Kind: "ConfigMap", Name: "cfg"}},
		Halt:    &change.Halt{ChangeSet: "0123456789abcdef", Failed: []string{"Deployment/canary/web"}, Signal: "Deployment/canary/web: kstatus Failed: Progress deadline exceeded"}}
	text := "Reroll halted change set 0123456789abcdef (ConfigMap/cfg changed) after 1 failed rollout(s): Deployment/canary/web: kstatus Failed: Progress deadline exceeded; workloads not yet rolled keep their pods until kubectl reroll resume, or a newer content"
	cases := map[string]struct {
		sink Sink           // the ALERT_SINK
		want map[string]any // the decoded body
	}{
		"slack": {sink: Slack, want: map[string]any{"text": text}},
		"teams": {sink: Teams, want: map[string]any{
			"@type": "MessageCard", "@context": "https://schema.org/extensions",
			"summary": "Reroll halted change set 0123456789abcdef", "text": text,
		}},
		"webhook": {sink: Webhook, want: map[string]any{
			"kind": "Deployment", "namespace": "canary", "name": "web",
			"changes": []any{map[string]any{"kind": "ConfigMap", "name": "cfg"}},
			"halt": map[string]any{"changeSet": "0123456789abcdef", "failed": []any{"Deployment/canary/web"},
				"signal": "Deployment/canary/web: kstatus Failed: Progress deadline exceeded"},
			"text": text,
		}},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			b, err := Body(c.sink, a, "")
			if err != nil {
				t.Fatal(err)
			}
			var got map[string]any
			if err := json.Unmarshal(b, &got); err != nil {
				t.Fatal(err)
			}
			gb, _ := json.Marshal(got)
			wb, _ := json.Marshal(c.want)
			if string(gb) != string(wb) {
				t.Errorf("Body(%s) = %s, want %s", c.sink, gb, wb)
			}
		})
	}
}

func TestParseSink(t *testing.T) {
	cases := map[string]struct {
		in      string // ALERT_SINK's value
		want    Sink   // the sink chosen
		wantErr bool   // whether it is rejected
	}{
		"empty is Reloader's default": {in: "", want: Webhook},
		"slack":                       {in: "slack", want: Slack},
		"case and spaces":             {in: " Teams ", want: Teams},
		"gchat":                       {in: "gchat", want: GChat},
		"webhook":                     {in: "webhook", want: Webhook},
		"unknown":                     {in: "discord", wantErr: true},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := ParseSink(c.in)
			if (err != nil) != c.wantErr || got != c.want {
				t.Errorf("ParseSink(%q) = %q, %v; want %q, error %v", c.in, got, err, c.want, c.wantErr)
			}
		})
	}
}

func TestBody_Invalid(t *testing.T) {
	a := change.Change{Kind: "Deployment", Namespace: "shop", Name: "app",
		Objects: []change.Object{{Kind: "ConfigMap", Name: "app-config", Keys: []string{"config.json"}}},
		Invalid: &change.Invalid{Findings: []string{`ConfigMap/app-config: app-config/config-json: key "config.json" is not valid JSON: invalid character '}' at line 1, column 18`}}}
	text := `Reroll held Deployment shop/app after ConfigMap/app-config changed keys config.json: the new content fails validation: ConfigMap/app-config: app-config/config-json: key "config.json" is not valid JSON: invalid character '}' at line 1, column 18; nothing rolls for it until the content changes to content that passes`
	cases := map[string]struct {
		sink Sink           // the ALERT_SINK
		want map[string]any // the decoded body
	}{
		"slack": {sink: Slack, want: map[string]any{"text": text}},
		"teams": {sink: Teams, want: map[string]any{
			"@type": "MessageCard", "@context": "https://schema.org/extensions",
			"summary": "Reroll held Deployment shop/app: invalid content", "text": text,
		}},
		"webhook": {sink: Webhook, want: map[string]any{
			"kind": "Deployment", "namespace": "shop", "name": "app",
			"changes": []any{map[string]any{"kind": "ConfigMap", "name": "app-config", "keys": []any{"config.json"}}},
			"invalid": map[string]any{"findings": []any{`ConfigMap/app-config: app-config/config-json: key "config.json" is not valid JSON: invalid character '}' at line 1, column 18`}},
			"text":    text,
		}},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			b, err := Body(c.sink, a, "")
			if err != nil {
				t.Fatal(err)
			}
			var got map[string]any
			if err := json.Unmarshal(b, &got); err != nil {
				t.Fatal(err)
			}
			gb, _ := json.Marshal(got)
			wb, _ := json.Marshal(c.want)
			if string(gb) != string(wb) {
				t.Errorf("Body(%s) = %s, want %s", c.sink, gb, wb)
			}
		})
	}
}
