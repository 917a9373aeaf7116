package validate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/checker"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"

	rerollv1 "github.com/reroll/reroll/api/v1alpha1"
)

const (
	// PerCallLimit is the most one CEL expression may cost, estimated
	// when it is compiled and enforced when it runs: 1,000,000, Kubernetes'
	// per-expression limit for CRD validation rules
	// (k8s.io/apiserver/pkg/apis/cel.PerCallLimit).
	PerCallLimit uint64 = 1_000_000

	// PerEvaluationLimit is the most all expressions of one object's
	// evaluation may cost together: 10,000,000, Kubernetes' runtime budget
	// for the validation rules of one object
	// (k8s.io/apiserver/pkg/apis/cel.RuntimeCELCostBudget).
	PerEvaluationLimit uint64 = 10_000_000

	// parseCostFactor is the cost of json(), yaml() and toml() per byte
	// read: 0.1, CEL's own cost of traversing a string.
	parseCostFactor = 0.1

	// maxKeyLength is a ConfigMap or Secret key's longest length.
	maxKeyLength = 253
)

// Overload IDs of the parse functions.
const (
	overloadJSON = "reroll_json_string"
	overloadYAML = "reroll_yaml_string"
	overloadTOML = "reroll_toml_string"
)

// env is the CEL environment of every expression: `data`, a map from key
// to value, and json(), yaml() and toml(), which parse a value into maps,
// lists, strings, numbers (int when whole, else double), bools and null.
var env = sync.OnceValues(func() (*cel.Env, error) {
	parse := func(f rerollv1.Format) cel.EnvOption {
		name := strings.ToLower(string(f))
		return cel.Function(name, cel.Overload("reroll_"+name+"_string", []*cel.Type{cel.StringType}, cel.DynType,
			cel.UnaryBinding(func(arg ref.Val) ref.Val {
				s, ok := arg.(types.String)
				if !ok {
					return types.MaybeNoSuchOverloadErr(arg)
				}
				doc, err := parseDocument(f, []byte(s))
				if err != nil {
					// Never the parser's message: it may quote a Secret.
					return types.NewErr("%s(): the value is not valid %s", name, f)
				}
				return types.DefaultTypeAdapter.NativeToValue(celValue(doc))
			})))
	}
	return cel.NewEnv(
		cel.Variable("data", cel.MapType(cel.StringType, cel.StringType)),
		cel.CrossTypeNumericComparisons(true),
		parse(rerollv1.FormatJSON), parse(rerollv1.FormatYAML), parse(rerollv1.FormatTOML),
	)
})

// celValue turns a parsed document's json.Number into int64 when whole and
// in range, else float64, so that `yaml(v).replicas <= 10` compares ints.
func celValue(doc any) any {
	switch v := doc.(type) {
	case map[string]any:
		for k, e := range v {
			v[k] = celValue(e)
		}
	case []any:
		for i, e := range v {
			v[i] = celValue(e)
		}
	case json.Number:
		if i, err := v.Int64(); err == nil {
			return i
		}
		f, _ := v.Float64()
		return f
	}
	return doc
}

// costError is an expression whose estimated cost exceeds PerCallLimit.
type costError struct{ cost uint64 }

func (e *costError) Error() string {
	return fmt.Sprintf("the expression's estimated cost, %d, exceeds the per-expression budget of %d "+
		"(iterating over data or over a parsed value multiplies the cost by its largest possible size)", e.cost, PerCallLimit)
}

// compileExpression parses, type-checks and estimates expr; it must be a
// bool within PerCallLimit. The program enforces PerCallLimit as it runs.
func compileExpression(expr string) (cel.Program, uint64, error) {
	e, err := env()
	if err != nil {
		return nil, 0, fmt.Errorf("cel environment: %w", err)
	}
	ast, iss := e.Compile(expr)
	if iss.Err() != nil {
		return nil, 0, iss.Err()
	}
	if ast.OutputType() != cel.BoolType {
		return nil, 0, fmt.Errorf("the expression is a %s, not a bool", ast.OutputType())
	}
	est, err := e.EstimateCost(ast, estimator{})
	if err != nil {
		return nil, 0, fmt.Errorf("estimate the cost: %w", err)
	}
	if est.Max > PerCallLimit {
		return nil, 0, &costError{cost: est.Max}
	}
	prg, err := e.Program(ast, cel.CostLimit(PerCallLimit), cel.CostTracking(estimator{}), cel.InterruptCheckFrequency(100))
	if err != nil {
		return nil, 0, err
	}
	return prg, est.Max, nil
}

// runExpression evaluates prg over data and returns its result and cost.
func runExpression(ctx context.Context, prg cel.Program, data map[string]any) (bool, uint64, error) {
	out, det, err := prg.ContextEval(ctx, map[string]any{"data": data})
	var cost uint64
	if det != nil && det.ActualCost() != nil {
		cost = *det.ActualCost()
	}
	if err != nil {
		return false, cost, err
	}
	b, ok := out.Value().(bool)
	if !ok {
		return false, cost, errors.New("the expression is not a bool")
	}
	return b, cost, nil
}

// expressionError says why an expression failed to run. For a Secret only
// the errors Reroll writes itself (no value in them) and the ones about
// the budget are shown: CEL's conversion errors can quote a value.
func expressionError(err error, sensitive bool) string {
	msg := err.Error()
	switch {
	case strings.Contains(msg, "actual cost limit exceeded"):
		return fmt.Sprintf("expression stopped: it exceeded the per-expression budget of %d", PerCallLimit)
	case strings.Contains(msg, "operation interrupted"):
		return fmt.Sprintf("expression stopped: it ran past %s", EvaluationTimeout)
	case strings.HasPrefix(msg, "no such key: "):
		return "expression failed: data has no key " + strings.TrimPrefix(msg, "no such key: ")
	case strings.Contains(msg, "(): the value is not valid"):
		return "expression failed: " + msg
	case sensitive:
		return "expression failed to evaluate (the error is not shown: it may quote a Secret's value)"
	}
	return "expression failed: " + msg
}

// estimator sizes `data` for the cost estimate, from the API server's
// limits, and costs the parse functions by the length they read.
type estimator struct{}

// EstimateSize bounds data (at most MaxObjectBytes entries), its keys
// (maxKeyLength) and its values (MaxObjectBytes).
func (estimator) EstimateSize(n checker.AstNode) *checker.SizeEstimate {
	p := n.Path()
	if len(p) == 0 || p[0] != "data" {
		return nil
	}
	switch {
	case len(p) == 1:
		return &checker.SizeEstimate{Min: 0, Max: MaxObjectBytes}
	case len(p) == 2 && p[1] == "@keys":
		return &checker.SizeEstimate{Min: 0, Max: maxKeyLength}
	case len(p) == 2 && p[1] == "@values":
		return &checker.SizeEstimate{Min: 0, Max: MaxObjectBytes}
	}
	return nil
}

// EstimateCallCost costs json(), yaml() and toml() at parseCostFactor per
// byte of their argument; a parsed document has at most as many elements
// as it has bytes.
func (e estimator) EstimateCallCost(_, overloadID string, _ *checker.AstNode, args []checker.AstNode) *checker.CallEstimate {
	switch overloadID {
	case overloadJSON, overloadYAML, overloadTOML:
	default:
		return nil
	}
	size := checker.SizeEstimate{Min: 0, Max: math.MaxUint64}
	if len(args) == 1 {
		if s := args[0].ComputedSize(); s != nil {
			size = *s
		} else if s := e.EstimateSize(args[0]); s != nil {
			size = *s
		}
	}
	result := checker.SizeEstimate{Min: 0, Max: size.Max}
	return &checker.CallEstimate{
		CostEstimate: checker.CostEstimate{Min: 1, Max: 1}.Add(size.MultiplyByCostFactor(parseCostFactor)),
		ResultSize:   &result,
	}
}

// CallCost is the cost of a parse function that ran: parseCostFactor per
// byte read, plus one.
func (estimator) CallCost(_, overloadID string, args []ref.Val, _ ref.Val) *uint64 {
	switch overloadID {
	case overloadJSON, overloadYAML, overloadTOML:
	default:
		return nil
	}
	cost := uint64(1)
	if len(args) == 1 {
		if s, ok := args[0].(types.String); ok {
			cost += uint64(math.Ceil(float64(len(s)) * parseCostFactor))
		}
	}
	return &cost
}
