package manifest

import (
	"errors"
	"fmt"
	"regexp"
	"regexp/syntax"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Regular expressions are bounded by what they compile to, not by their
// text: `[^a]{1000}` is 7 bytes and a thousand instructions, and Go's
// compiler expands every counted repeat. regexCost estimates the size of
// the compiled program from the parse tree, which syntax.Parse builds in
// time linear in the pattern, before anything is compiled.

// parseFlags are the flags regexp.Compile uses.
const parseFlags = syntax.Perl

// regexCost returns an upper estimate of the number of instructions the
// RE2 program of re takes, saturating just past limit so that nested
// repeats cannot overflow.
func regexCost(re *syntax.Regexp, limit int) int {
	sat := func(n int) int { return min(n, limit+1) }
	switch re.Op {
	case syntax.OpLiteral:
		return sat(len(re.Rune) + 1)
	case syntax.OpConcat, syntax.OpAlternate:
		n := 1
		for _, sub := range re.Sub {
			n = sat(n + regexCost(sub, limit) + 1)
		}
		return n
	case syntax.OpCapture:
		return sat(regexCost(re.Sub[0], limit) + 2)
	case syntax.OpStar, syntax.OpPlus, syntax.OpQuest:
		return sat(regexCost(re.Sub[0], limit) + 2)
	case syntax.OpRepeat:
		// x{n,m} compiles to n copies of x and m-n optional copies; x{n,}
		// to n copies and a star.
		copies := max(re.Max, re.Min, 1)
		sub := regexCost(re.Sub[0], limit)
		if sub > 0 && copies > (limit+1)/sub {
			return limit + 1
		}
		// Each optional copy adds a split instruction.
		return sat(sub*copies + (copies - re.Min) + 1)
	}
	// Character classes, any-char, anchors and empty matches are one
	// instruction each.
	return 1
}

// parsePattern parses p as the validator will compile it and returns its
// estimated program size, or an *Error that explains, without quoting p,
// why it is refused. It does not compile p.
func parsePattern(p, path string, lim Limits) (int, error) {
	if len(p) > lim.MaxPatternBytes {
		return 0, newError(KindTooLarge, path,
			fmt.Sprintf("regular expression is %d bytes, limit is %d", len(p), lim.MaxPatternBytes))
	}
	re, err := syntax.Parse(p, parseFlags)
	if err != nil {
		reason := "invalid syntax"
		var se *syntax.Error
		switch {
		case strings.Contains(p, "(?="), strings.Contains(p, "(?!"),
			strings.Contains(p, "(?<="), strings.Contains(p, "(?<!"):
			reason = "lookaround"
		case backreference.MatchString(p):
			reason = "backreference"
		case errors.As(err, &se):
			// The code is fixed library text; se.Expr would quote input.
			reason = se.Code.String()
		}
		if se != nil && (se.Code == syntax.ErrLarge || se.Code == syntax.ErrInvalidRepeatSize || se.Code == syntax.ErrNestingDepth) {
			return 0, wrapError(KindTooLarge, path, fmt.Sprintf(
				"regular expression is too complex: %s", reason), err)
		}
		return 0, wrapError(KindInvalid, path, fmt.Sprintf(
			"regular expression not supported: %s (patterns use Go RE2 syntax, which has no lookaround or backreferences)",
			reason), err)
	}
	// The program also has a fail, a match and the instructions of the
	// implicit whole-match capture.
	const overhead = 4
	cost := regexCost(re, lim.MaxPatternCost) + overhead
	if cost > lim.MaxPatternCost {
		return 0, newError(KindTooLarge, path, fmt.Sprintf(
			"regular expression compiles to more than %d instructions (counted repeats are expanded)",
			lim.MaxPatternCost))
	}
	return cost, nil
}

// boundedRegexp is a compiled pattern with its estimated program size,
// which the validation budget charges per byte matched.
type boundedRegexp struct {
	*regexp.Regexp
	cost int
}

// regexpEngine returns the engine the validator compiles patterns with:
// every pattern is bounded by parsePattern before it is compiled, and each
// distinct pattern is compiled once per schema compilation, although the
// library asks for it twice (meta-schema "format":"regex", then the
// keyword).
func regexpEngine(lim Limits) jsonschema.RegexpEngine {
	seen := make(map[string]*boundedRegexp)
	return func(p string) (jsonschema.Regexp, error) {
		if re, ok := seen[p]; ok {
			return re, nil
		}
		cost, err := parsePattern(p, "", lim)
		if err != nil {
			return nil, err
		}
		re, err := regexp.Compile(p)
		if err != nil {
			return nil, err
		}
		b := &boundedRegexp{Regexp: re, cost: cost}
		seen[p] = b
		return b, nil
	}
}
