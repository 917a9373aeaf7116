// Package events builds Reroll's manager whose Event recorders post
// core/v1 Events through a client-go broadcaster of Reroll's own: protobuf
// request bodies, and an Event correlator of EventCacheSize entries per
// cache (NewManager). The reconcilers record through
// manager.GetEventRecorderFor as before; the tests of what reaches the API
// server run against the local control plane in internal/controller.
package events
