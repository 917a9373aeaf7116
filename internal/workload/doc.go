// Package workload adapts each kind of workload that Reroll rolls to one
// small interface: how to make an empty object and list, and where its pod
// template is. Adding a kind is one file.
package workload
