package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestProjectionFlags_Options(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good")
	short := filepath.Join(dir, "short")
	if err := os.WriteFile(good, []byte(strings.Repeat("k", 32)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(short, []byte("secret-but-short"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		args    []string // command line
		wantErr string   // part of the error; empty for none
		keyLen  int      // length of the key read
	}{
		"off needs nothing":     {args: nil},
		"on with a key":         {args: []string{"--enable-projections", "--projection-key-file", good}, keyLen: 32},
		"on without a key file": {args: []string{"--enable-projections"}, keyLen: 0}, // main derives it from the installation key
		"short key":             {args: []string{"--enable-projections", "--projection-key-file", short}, wantErr: "holds 16 bytes"},
		"missing key file":      {args: []string{"--enable-projections", "--projection-key-file", filepath.Join(dir, "nope")}, wantErr: "no such file"},
		"no service account":    {args: []string{"--enable-projections", "--projection-key-file", good, "--projection-service-account="}, wantErr: "a name is required"},
		"zero rewrites":         {args: []string{"--enable-projections", "--projection-key-file", good, "--projection-conflict-rewrites=0"}, wantErr: "not positive"},
		"zero conflict window":  {args: []string{"--enable-projections", "--projection-key-file", good, "--projection-conflict-window=0s"}, wantErr: "not positive"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			var f flags
			if err := newFlagSet(&f).Parse(c.args); err != nil {
				t.Fatal(err)
			}
			o, err := f.projections.options()
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("options() error = %v, want one containing %q", err, c.wantErr)
				}
				if strings.Contains(err.Error(), "secret-but-short") {
					t.Fatal("the error prints the key")
				}
				return
			}
			if err != nil || len(o.Key) != c.keyLen {
				t.Fatalf("options() = key of %d bytes, %v; want %d bytes", len(o.Key), err, c.keyLen)
			}
			if o.Conflict.Window != 10*time.Minute || o.DefaultServiceAccount != "default" {
				t.Fatalf("options() = %+v, want the defaults", o)
			}
		})
	}
}
