package main

import (
	"os"
	"path/filepath"
	"testing"
)

func TestStampedCommitRE_FindsTheCommitOfAVersionLine(t *testing.T) {
	for line, want := range map[string]string{
		"reroll v0.9.0 (commit 0977f28ab1c2, built 2026-11-27T06:17:00Z, go1.26.8, linux/amd64)\n":  "0977f28ab1c2",
		"reroll dev (commit 0977f28ab1c2-dirty, built 2026-11-27T06:17:00Z, go1.26.8, linux/amd64)": "0977f28ab1c2-dirty",
		"reroll unknown (commit unknown, built unknown, go1.26.8, linux/amd64)":                     "",
		"Usage of reloader: unknown flag --version":                                                 "",
	} {
		got := ""
		if m := stampedCommitRE.FindStringSubmatch(line); m != nil {
			got = m[1]
		}
		if got != want {
			t.Errorf("%q: got %q, want %q", line, got, want)
		}
	}
}

func TestStampedCommit_RunsTheBinarysVersionFlag(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "reroll")
	script := "#!/bin/sh\n[ \"$1\" = --version ] && echo 'reroll v0.1.0 (commit 0977f28ab1c2, built 2026-11-27T06:17:00Z, go1.26.8, linux/amd64)'\n"
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	if got := stampedCommit(bin); got != "0977f28ab1c2" {
		t.Errorf("a binary whose --version names a commit: got %q", got)
	}
	if got := stampedCommit("/bin/true"); got != "" {
		t.Errorf("a binary that prints no version line: got %q, want none", got)
	}
}
