package manifest_test

import (
	"bytes"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"agentgw/manifest"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// expensivePattern compiles to about 5,000 RE2 instructions from 73 bytes.
const expensivePattern = `(?:[^a]{1000})(?:[^b]{1000})(?:[^c]{1000})(?:[^d]{1000})(?:[^e]{1000})`

// patternManifest is a manifest whose one tool has n properties, each
// with pattern p.
func patternManifest(n int, p string) []byte {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"p%d":{"type":"string","pattern":%q}`, i, p)
	}
	return []byte(manifestWithTool(`{"name":"t","inputSchema":{"type":"object","properties":{` + b.String() + `}}}`))
}

// anyOfChain is a manifest whose input schema is a chain of depth
// definitions, each an anyOf of two $refs to the next: 2^depth subschemas
// apply in place to the root value.
func anyOfChain(depth int) []byte {
	var b strings.Builder
	for i := range depth {
		fmt.Fprintf(&b, `"d%d":{"anyOf":[{"$ref":"#/$defs/d%d"},{"$ref":"#/$defs/d%d"}]},`, i, i+1, i+1)
	}
	fmt.Fprintf(&b, `"d%d":{"type":"integer"}`, depth)
	return []byte(manifestWithTool(`{"name":"t","inputSchema":{"type":"object","$defs":{` + b.String() +
		`},"properties":{"x":{"$ref":"#/$defs/d0"}}}}`))
}

// allocated returns the bytes f allocates.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

func wantTooLarge(t *testing.T, err error, msg string) {
	t.Helper()
	var me *manifest.Error
	if !errors.As(err, &me) || me.Kind != manifest.KindTooLarge {
		t.Fatalf("got %v, want a KindTooLarge error", err)
	}
	if !strings.Contains(me.Msg, msg) {
		t.Errorf("message %q does not say %q", me.Msg, msg)
	}
}

// hostileCases are manifests that cost seconds of CPU before these
// limits, each with what their refusal says.
var hostileCases = []struct {
	name string
	raw  []byte
	msg  string
}{
	// 118 KB: 1,000 patterns of about 5,000 instructions each.
	{"expensive patterns", patternManifest(1000, expensivePattern), "more than 2000 instructions"},
	// Each pattern is under the per-pattern bound; together they are not.
	{"many patterns", patternManifest(200, `[^a]{1000}x`), "instructions in all"},
	{"too many patterns", patternManifest(300, `[a-z]+`), "more than 256 regular expressions"},
	{"anyOf chain", anyOfChain(40), "subschemas apply in place"},
}

func TestHostileSchemasRefused(t *testing.T) {
	for _, tc := range hostileCases {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			n := allocated(func() { _, err = manifest.Parse(tc.raw, manifest.Options{}) })
			wantTooLarge(t, err, tc.msg)
			// Compiling the 1,000 patterns took 2.8 s and hundreds of MB;
			// refusing them is a parse of the document and a walk.
			if limit := uint64(40*len(tc.raw)) + 8<<20; n > limit {
				t.Errorf("refusal allocated %d bytes, want under %d", n, limit)
			}
			t.Logf("%d-byte manifest refused after allocating %d bytes", len(tc.raw), n)
		})
	}
}

func BenchmarkHostileSchemas(b *testing.B) {
	for _, tc := range hostileCases {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := manifest.Parse(tc.raw, manifest.Options{}); err == nil {
					b.Fatal("accepted")
				}
			}
		})
	}
}

func TestPatternLimitsAdmitOrdinaryPatterns(t *testing.T) {
	for _, p := range []string{
		`^[a-z]{1,64}$`,
		`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`,
		`^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$`,
		`^[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,63}$`,
	} {
		if _, err := manifest.Parse(patternManifest(50, p), manifest.Options{}); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
	// A repeat nested in a repeat multiplies.
	_, err := manifest.Parse(patternManifest(1, `(?:(?:abc){30}){30}`), manifest.Options{})
	wantTooLarge(t, err, "more than 2000 instructions")
	// Go's own bound on repeat counts is reported as too complex, not as
	// a syntax error.
	_, err = manifest.Parse(patternManifest(1, `a{1001}`), manifest.Options{})
	wantTooLarge(t, err, "too complex")
}

func TestApplicatorsAdmitSharedDefinitions(t *testing.T) {
	// 12 levels is 4,096 paths through the chain: at the bound, with the
	// root; 11 is well under.
	if _, err := manifest.Parse(anyOfChain(10), manifest.Options{}); err != nil {
		t.Fatal(err)
	}
	// A recursive schema descends into the instance and is fine.
	tree := manifestWithTool(`{"name":"t","inputSchema":{"type":"object","$defs":{"node":{"type":"object","properties":{"kids":{"type":"array","items":{"$ref":"#/$defs/node"}}}}},"properties":{"root":{"$ref":"#/$defs/node"}}}}`)
	if _, err := manifest.Parse([]byte(tree), manifest.Options{}); err != nil {
		t.Fatal(err)
	}
}

func decode(t testing.TB, s string) any {
	t.Helper()
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader([]byte(s)))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// nestedArrays is depth arrays around a number.
func nestedArrays(depth int) string {
	return strings.Repeat("[", depth) + "1" + strings.Repeat("]", depth)
}

func TestValidationBudget(t *testing.T) {
	// Each level tries two branches that both descend: 2^depth steps for
	// an instance nested depth deep, although the schema is tiny.
	schema := `{"type":"object","$defs":{"n":{"anyOf":[{"type":"array","items":{"$ref":"#/$defs/n"}},{"type":"array","items":{"$ref":"#/$defs/n"},"minItems":2}]}},"properties":{"a":{"$ref":"#/$defs/n"}}}`
	v, err := manifest.CompileValidator([]byte(schema), true, manifest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := v.Validate(decode(t, `{"a":[[[]]]}`)); err != nil {
		t.Fatalf("shallow instance: %v", err)
	}
	var ve *jsonschema.ValidationError
	if err := v.Validate(decode(t, `{"a":[[1]]}`)); !errors.As(err, &ve) {
		t.Fatalf("invalid shallow instance: got %v, want a validation error", err)
	}
	deep := `{"a":` + nestedArrays(40) + `}`
	n := allocated(func() { err = v.Validate(decode(t, deep)) })
	wantTooLarge(t, err, "more than 262144 steps")
	if !errors.Is(err, manifest.ErrValidationBudget) {
		t.Errorf("%v does not wrap ErrValidationBudget", err)
	}
	if strings.Contains(err.Error(), "[") {
		t.Errorf("error %q reflects the instance", err)
	}
	t.Logf("refused after allocating %d bytes", n)

	// A small budget stops a large but otherwise cheap instance.
	small, err := manifest.CompileValidator([]byte(`{"type":"object","properties":{"a":{"type":"array","items":{"type":"integer"}}}}`), true,
		manifest.Options{Limits: manifest.Limits{MaxValidationSteps: 100}})
	if err != nil {
		t.Fatal(err)
	}
	if err := small.Validate(decode(t, `{"a":[1,2,3]}`)); err != nil {
		t.Fatal(err)
	}
	err = small.Validate(decode(t, `{"a":[`+strings.Repeat("1,", 200)+`1]}`))
	wantTooLarge(t, err, "more than 100 steps")
}

func TestUniqueItemsBound(t *testing.T) {
	v, err := manifest.CompileValidator([]byte(`{"type":"object","properties":{"ids":{"type":"array","uniqueItems":true}}}`), true, manifest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	items := func(n int) string {
		parts := make([]string, n)
		for i := range parts {
			parts[i] = fmt.Sprint(i)
		}
		return `{"ids":[` + strings.Join(parts, ",") + `]}`
	}
	if err := v.Validate(decode(t, items(manifest.DefaultMaxUniqueItems))); err != nil {
		t.Fatalf("at the bound: %v", err)
	}
	err = v.Validate(decode(t, items(manifest.DefaultMaxUniqueItems+1)))
	wantTooLarge(t, err, "more than 512 items")
	// Without uniqueItems the same array is only counted.
	plain, err := manifest.CompileValidator([]byte(`{"type":"object","properties":{"ids":{"type":"array"}}}`), true, manifest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := plain.Validate(decode(t, items(4000))); err != nil {
		t.Fatal(err)
	}
}

func TestParseKeepsCompiledSchemas(t *testing.T) {
	m, err := manifest.Parse([]byte(manifestWithTool(
		`{"name":"t","inputSchema":{"type":"object"},"outputSchema":{"type":"object"}}`,
		`{"name":"u","inputSchema":{"type":"object"}}`)), manifest.Options{KeepValidators: true})
	if err != nil {
		t.Fatal(err)
	}
	if m.Tools[0].InputValidator() == nil || m.Tools[0].OutputValidator() == nil {
		t.Error("tool t: compiled schemas not kept")
	}
	if m.Tools[1].InputValidator() == nil || m.Tools[1].OutputValidator() != nil {
		t.Error("tool u: wrong compiled schemas")
	}
	// By default they are dropped once checked.
	m, err = manifest.Parse(m.Canonical, manifest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if m.Tools[0].InputValidator() != nil {
		t.Error("compiled schemas kept without KeepValidators")
	}
}
