package notify

import "net/url"

// Redact returns the form of an endpoint URL that logs, errors and Events
// may show: its scheme and host only, with "/..." standing for any path,
// query or fragment, and never user information. Slack's and Teams'
// incoming webhook URLs carry their secret token in the path, and any URL
// may carry credentials in user information or the query.
func Redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return "(unparsable URL)"
	}
	out := u.Scheme + "://" + u.Host
	if (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		out += "/..."
	}
	return out
}
