package redact

import (
	"errors"
	"net/url"
	"testing"

	"github.com/onsi/gomega"
)

func TestURL(t *testing.T) {
	cases := map[string]struct {
		// in is the URL as configured; want is what may be shown.
		in, want string
	}{
		"token in the path":      {in: "https://hooks.slack.com/services/T000/B000/XXXXSECRET", want: "https://hooks.slack.com"},
		"token in the query":     {in: "https://hooks.example:8443/x?token=SECRET#frag", want: "https://hooks.example:8443"},
		"user info":              {in: "http://user:SECRET@hooks.example/", want: "http://hooks.example"},
		"no host":                {in: "SECRET", want: "<invalid URL>"},
		"unparseable keeps none": {in: "http://[SECRET", want: "<invalid URL>"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			gomega.NewWithT(t).Expect(URL(tc.in)).To(gomega.Equal(tc.want))
		})
	}
}

func TestError_DropsTheURL(t *testing.T) {
	g := gomega.NewWithT(t)
	inner := errors.New("connection refused")
	err := Error(&url.Error{Op: "Post", URL: "https://hooks.example/SECRET", Err: inner})
	g.Expect(err).To(gomega.Equal(inner))
	g.Expect(Error(inner)).To(gomega.Equal(inner))
}
