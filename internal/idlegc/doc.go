// Package idlegc lowers the Go garbage collector's target while the process
// allocates little, and gives it back when work resumes.
//
// Go's default target (GOGC=100) lets the heap grow to twice the live heap
// between collections, and the runtime keeps those pages resident. Reroll
// keeps that default while it works, where a lower target costs CPU in
// proportion to what it allocates (issue #36: 17 to 35% of the fan-out
// profile's CPU at 25), and lowers it while idle, where allocations are few
// and a lower target costs almost nothing: a cluster that changes nothing
// holds Reroll's resident memory near its live heap instead of twice that.
//
// FirstPass tells when the controllers' start-up work is done (every
// workload cached at start reconciled once), the moment cmd/reroll returns
// that work's garbage to the operating system.
package idlegc
