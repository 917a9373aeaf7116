// Package redact removes credentials from what Reroll writes about the URLs
// it posts to: a notification endpoint's URL often carries a token (in its
// user info, path or query), and Events, logs, errors and metrics are read
// by people who must not get it.
package redact
