package controller

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
)

// AcceptProtobuf is the Accept header PreferProtobuf sets: protobuf where
// the API server has it (built-in kinds), JSON otherwise (custom
// resources), as kube-controller-manager asks.
const AcceptProtobuf = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON

// PreferProtobuf makes every client built from cfg ask for protobuf answers
// (AcceptProtobuf), in place. controller-runtime's clients already send and
// read protobuf for built-in kinds, but client-go's Event recorder (which
// controller-runtime's manager starts) posts each Event through a method
// that asks for JSON, and decoding that JSON answer was about a tenth of
// Reroll's CPU on the fan-out bench (docs/benchmarks.md). Request bodies
// keep their encoding; clients that set their own Accept (dynamic,
// metadata-only, discovery) keep it; a custom resource is still answered in
// JSON, the second choice.
func PreferProtobuf(cfg *rest.Config) {
	cfg.AcceptContentTypes = AcceptProtobuf
}
