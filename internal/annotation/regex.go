package annotation

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"regexp/syntax"
	"sync"

	"k8s.io/utils/lru"
)

// Limits on the regular expressions of Reloader's list annotations. They
// come from anyone who can annotate a workload or a pod, so each is bounded
// before it costs anything: Go's regexp.Compile of the 3,010-byte
// `(?:a…a){1000}` allocates about 650 MiB, and 64 entries like
// `(?:.?){999}#1` take seconds to match against a namespace's names. Real
// lists hold names and short patterns ("app-.*" is 10 instructions;
// "[a-z0-9]{1,63}" 255 units).
const (
	// MaxPatternLength is the longest list entry compiled, in bytes.
	MaxPatternLength = 512
	// MaxPatternCost bounds one entry's compiled program: its instructions
	// plus the rune ranges of its character classes (\pL alone is 659
	// ranges). It is checked on the parsed tree before syntax.Compile runs,
	// then on the program before regexp.Compile runs.
	MaxPatternCost = 1000
	// MaxMatchCost bounds the matching done for one workload in one Parse's
	// lists (one reconcile): the sum, over every match of a pattern entry
	// against a name, of the entry's instructions times the name's length
	// plus one (Go's matchers are linear in both). 20,000,000 is about
	// 20-200 ms of one core; 64 short patterns against 300 names of 50
	// characters cost about 4,000,000.
	MaxMatchCost = 20_000_000
)

// meter counts the matching cost left to one Parse's lists. Parse makes
// one; every Pattern of its lists shares it, so the copies of an OptIn do
// too. A meter is used by one goroutine at a time, as an OptIn is.
type meter struct {
	mu   sync.Mutex
	left int64
	// over names the first annotation whose match found the meter empty.
	over string
}

// charge takes cost from the meter; false when it is empty (and stays so).
func (m *meter) charge(annotation string, cost int64) bool {
	if m == nil {
		return true
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.over != "" {
		return false
	}
	if cost > m.left {
		m.over, m.left = annotation, 0
		return false
	}
	m.left -= cost
	return true
}

func (m *meter) exceeded() string {
	if m == nil {
		return ""
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.over
}

// compiled memoizes compile: Parse runs on every reconcile of a workload,
// and most lists repeat the same few patterns. It is bounded (least recently
// used entries go first) because the patterns come from users' annotations;
// with MaxPatternCost each entry holds at most a few tens of KiB. A
// regexp.Regexp is safe for concurrent use.
var compiled = lru.New(1024)

// compiledPattern is one entry of compiled.
type compiledPattern struct {
	re *regexp.Regexp
	// insts is the program's instruction count, the per-character cost of
	// a match.
	insts int
	err   error
}

// compile returns entry as a regular expression anchored at both ends
// (Reloader's list syntax) and its instruction count, compiling each
// distinct entry once. An entry longer than MaxPatternLength, or whose
// program would cost more than MaxPatternCost, is refused before it is
// compiled.
func compile(entry string) (*regexp.Regexp, int, error) {
	if v, ok := compiled.Get(entry); ok {
		c := v.(compiledPattern)
		return c.re, c.insts, c.err
	}
	c := compileBounded(entry)
	compiled.Add(entry, c)
	return c.re, c.insts, c.err
}

// errTooCostly marks an entry refused for its size or its program's cost,
// not for its syntax.
var errTooCostly = errors.New("too costly")

func compileBounded(entry string) compiledPattern {
	if len(entry) > MaxPatternLength {
		return compiledPattern{err: fmt.Errorf("%w: %d bytes is longer than the limit of %d", errTooCostly, len(entry), MaxPatternLength)}
	}
	source := "^(?:" + entry + ")$"
	tree, err := syntax.Parse(source, syntax.Perl)
	if err != nil {
		return compiledPattern{err: err}
	}
	// Simplify expands counted repetitions into shared subtrees, so it costs
	// memory in the size of the tree, not of the program; treeCost bounds
	// the program without building it.
	tree = tree.Simplify()
	if c := treeCost(tree, map[*syntax.Regexp]int64{}); c > MaxPatternCost {
		return compiledPattern{err: fmt.Errorf("%w: it would compile to a program costing %s units, more than the limit of %d", errTooCostly, costString(c), MaxPatternCost)}
	}
	prog, err := syntax.Compile(tree)
	if err != nil {
		return compiledPattern{err: err}
	}
	if c := progCost(prog); c > MaxPatternCost {
		return compiledPattern{err: fmt.Errorf("%w: it compiles to a program costing %d units, more than the limit of %d", errTooCostly, c, MaxPatternCost)}
	}
	re, err := regexp.Compile(source)
	return compiledPattern{re: re, insts: len(prog.Inst), err: err}
}

func costString(c int64) string {
	if c >= math.MaxInt32 {
		return "over 2^31"
	}
	return fmt.Sprint(c)
}

// progCost is a program's instructions plus the rune ranges of its
// instructions.
func progCost(p *syntax.Prog) int64 {
	n := int64(len(p.Inst))
	for _, in := range p.Inst {
		n += int64(len(in.Rune) / 2)
	}
	return n
}

// treeCost is an upper bound of progCost for the program syntax.Compile
// would make of the simplified tree re: a node counts once per path that
// reaches it, as the compiler emits it, so shared subtrees (Simplify's
// expansion of x{n}) multiply. Sums saturate at math.MaxInt32, far above
// any limit, so no input overflows. memo holds each node's cost.
func treeCost(re *syntax.Regexp, memo map[*syntax.Regexp]int64) int64 {
	if c, ok := memo[re]; ok {
		return c
	}
	var c int64
	switch re.Op {
	case syntax.OpLiteral:
		c = int64(len(re.Rune))
	case syntax.OpCharClass:
		c = 1 + int64(len(re.Rune)/2)
	case syntax.OpStar, syntax.OpPlus, syntax.OpQuest:
		c = 1 + treeCost(re.Sub[0], memo)
	case syntax.OpRepeat:
		// Simplify leaves none; bound it as the compiler would expand it.
		n := int64(re.Max)
		if n < 0 {
			n = int64(re.Min) + 1
		}
		// n is at most 1000 (syntax.Parse refuses more) and a cost at most
		// math.MaxInt32, so the product fits an int64.
		c = sat(max(n, 1)*(1+treeCost(re.Sub[0], memo)), 1)
	case syntax.OpCapture:
		c = 2 + treeCost(re.Sub[0], memo)
	case syntax.OpConcat, syntax.OpAlternate:
		c = int64(len(re.Sub))
		for _, s := range re.Sub {
			c = sat(c, treeCost(s, memo))
		}
	default:
		// Empty match, any char, anchors, word boundaries: one instruction
		// each (two for an alternation's split are counted above).
		c = 1
	}
	memo[re] = c
	return c
}

// sat adds a and b, non-negative costs, capped at math.MaxInt32.
func sat(a, b int64) int64 {
	return min(a+b, math.MaxInt32)
}
