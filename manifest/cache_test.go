package manifest_test

import (
	"testing"

	"agentgw/manifest"
)

// TestCachedValidatorSharesParse: a manifest parsed with KeepValidators and
// the default options leaves its compiled schemas in the process-wide
// cache, so checking a result later compiles nothing; other options do
// not, because their limits differ from the cache's.
func TestCachedValidatorSharesParse(t *testing.T) {
	raw := []byte(`{"manifestSpecVersion":"0","agent":{"jid":"cache@agents.example","name":"c","version":"1"},"tools":[` +
		`{"name":"t","description":"d","inputSchema":{"type":"object","properties":{"cache-test-in":{}}},` +
		`"outputSchema":{"type":"object","properties":{"cache-test-out":{}}}}]}`)
	m, err := manifest.Parse(raw, manifest.Options{KeepValidators: true})
	if err != nil {
		t.Fatal(err)
	}
	tool, _ := m.Tool("t")
	for _, dir := range []struct {
		name   string
		schema []byte
		input  bool
		kept   *manifest.Validator
	}{
		{"input", tool.InputSchema, true, tool.InputValidator()},
		{"output", tool.OutputSchema, false, tool.OutputValidator()},
	} {
		v, err := manifest.CachedValidator(dir.schema, dir.input)
		if err != nil {
			t.Fatal(err)
		}
		if v != dir.kept || v == nil {
			t.Errorf("%s: CachedValidator compiled again instead of reusing Parse's validator", dir.name)
		}
	}

	raw2 := []byte(`{"manifestSpecVersion":"0","agent":{"jid":"cache@agents.example","name":"c","version":"1"},"tools":[` +
		`{"name":"t","description":"d","inputSchema":{"type":"object","properties":{"cache-test-limits":{}}}}]}`)
	m2, err := manifest.Parse(raw2, manifest.Options{KeepValidators: true, Limits: manifest.Limits{MaxValidationSteps: 10}})
	if err != nil {
		t.Fatal(err)
	}
	tool2, _ := m2.Tool("t")
	v, err := manifest.CachedValidator(tool2.InputSchema, true)
	if err != nil {
		t.Fatal(err)
	}
	if v == tool2.InputValidator() {
		t.Error("a validator with other limits was cached")
	}
	if again, _ := manifest.CachedValidator(tool2.InputSchema, true); again != v {
		t.Error("a second lookup compiled again")
	}
	// An input schema must declare an object root; the same bytes as an
	// output schema are another entry.
	if _, err := manifest.CachedValidator([]byte(`{"type":"string"}`), true); err == nil {
		t.Error("an input schema without an object root compiled")
	}
	if _, err := manifest.CachedValidator([]byte(`{"type":"string"}`), false); err != nil {
		t.Errorf("output schema: %v", err)
	}
}
