package compact

import "sigs.k8s.io/controller-runtime/pkg/client"

// Indexed returns values(obj), the values of a field index function of
// obj alone: for a *Workload computed by its first call and kept with it
// (each value one shared string, as pack shares repeated strings), so that
// later calls read nothing; for any other obj computed on each call.
//
// client-go's indexer computes the index values of an object again when
// it is replaced or deleted, to remove them from its index: on each update
// of a cached workload, the replaced copy's values as well as the new
// copy's. The reference index of the workload kinds (index.References)
// decodes the compact pod template for them (PodTemplate: about 3 µs and
// 2.4 KB on a Deployment of the fan-out bench profile); kept with the
// Workload, the replaced copy's values cost nothing.
//
// A Workload keeps the values of one index function: only that function
// (internal/controller's reference index) may call Indexed, and values
// must be the same function of the object on every call (it is: the
// function of one cache's informer, under one configuration). Calls for
// one Workload must not run concurrently: client-go's indexer calls its
// index functions under its store's write lock when it adds, updates,
// deletes or replaces objects (only its Index method, which nothing in
// Reroll calls, computes values under the read lock). The caller must not
// change the slice returned.
func Indexed(obj client.Object, values func(client.Object) []string) []string {
	w, ok := obj.(*Workload)
	if !ok {
		return values(obj)
	}
	if !w.indexed {
		v := values(w)
		for i := range v {
			v[i] = shared(v[i])
		}
		w.index, w.indexed = v, true
	}
	return w.index
}
