// Package store is Reroll's cache of ConfigMaps and Secrets: client-go
// informers that keep, per object, only what digest.Object holds (metadata,
// one digest per key, Reloader's SHA-1), never a value, and never the typed
// object, whose size would dominate Reroll's memory in a cluster of
// 100,000 Secrets. Controllers watch it through Store.Source and read it
// through Store.Get and Store.Names; the manager runs it.
package store
