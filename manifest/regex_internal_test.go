package manifest

import (
	"regexp/syntax"
	"testing"
)

// FuzzPatternCost checks that the estimate by which patterns are bounded
// is never below the size of the program Go compiles from them.
func FuzzPatternCost(f *testing.F) {
	for _, s := range []string{
		`^[a-z]{1,64}$`, `(?:[^a]{1000})(?:[^b]{1000})`, `(a|bc|d*){3,7}`, `x{2,}y+?z??`,
		`(?i)straße`, `\pL{5}|\d{0,9}`, `((a{10}){10})`, `(?:)`, `[\x{1F600}-\x{1F64F}]{3}`,
	} {
		f.Add(s)
	}
	lim := DefaultLimits()
	f.Fuzz(func(t *testing.T, p string) {
		cost, err := parsePattern(p, "", lim)
		if err != nil {
			return
		}
		re, err := syntax.Parse(p, parseFlags)
		if err != nil {
			t.Fatalf("%q: accepted but does not parse: %v", p, err)
		}
		prog, err := syntax.Compile(re.Simplify())
		if err != nil {
			t.Fatalf("%q: accepted but does not compile: %v", p, err)
		}
		if len(prog.Inst) > cost {
			t.Fatalf("%q: estimated %d instructions, compiles to %d", p, cost, len(prog.Inst))
		}
	})
}
