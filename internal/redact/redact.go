package redact

import (
	"errors"
	"net/url"
)

// URL returns the scheme and host of s ("https://hooks.example.com"), the
// only parts of a notification endpoint's URL that Reroll shows: user info,
// path, query and fragment may all hold a token (Slack's and Teams' URLs
// carry it in the path). A value that does not parse as an absolute URL
// with a host gives "<invalid URL>", never the value.
func URL(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return "<invalid URL>"
	}
	return u.Scheme + "://" + u.Host
}

// Error returns err without the *url.Error wrapper that net/http adds,
// whose message repeats the full URL; other errors pass unchanged.
func Error(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}
