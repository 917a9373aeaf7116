package controller

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
)

// AcceptProtobuf is the Accept header PreferProtobuf sets: protobuf where
// the API server has it (built-in kinds), JSON otherwise (custom
// resources).
const AcceptProtobuf = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON

// PreferProtobuf makes every client built from cfg ask for protobuf answers
// (AcceptProtobuf), in place. controller-runtime's clients already send and
// read protobuf for built-in kinds, but client-go's Event recorder (which
// controller-runtime's manager starts) posts each Event through a method
// that asks for JSON, and decoding those JSON answers was 13.6% of a CPU
// profile of the fan-out bench (docs/benchmarks.md); the halt
// records' watch (internal/halts) reads protobuf too. Clients that set
// their own Accept (dynamic, metadata-only, discovery, internal/store) keep
// it; a custom resource is still answered in JSON, the second choice.
// controller-runtime's clients still send protobuf bodies for built-in
// kinds; client-go's generated clients built from cfg now send JSON bodies
// (they pick protobuf only when cfg sets neither ContentType nor
// AcceptContentTypes), which only
// Reroll's access reviews (internal/metricsauth) use.
func PreferProtobuf(cfg *rest.Config) {
	cfg.AcceptContentTypes = AcceptProtobuf
}
