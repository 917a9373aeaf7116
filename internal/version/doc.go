// Package version says which build of Reroll is running: its version, the
// commit it was built from and when that commit was made. `reroll --version`
// and `kubectl reroll version` print it, and bug reports quote it.
//
// Release builds set the values with the linker (hack/build.sh passes
// -ldflags "-X ..." from the VERSION file and git); a plain `go build` or
// `go install` falls back to what the Go toolchain recorded in the binary
// (debug.ReadBuildInfo: the module version and the vcs.* settings).
package version
