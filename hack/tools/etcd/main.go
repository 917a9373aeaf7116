// Command etcd runs etcd 3.5.21 for the local control plane. Upstream's own
// module carries replace directives, so `go install` of it fails; this wrapper
// builds the same server from go.etcd.io/etcd/server/v3.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
