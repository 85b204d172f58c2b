package exec_test

import (
	"strings"
	"testing"

	"agentgw/runtime/exec"
	"agentgw/runtime/runtimetest"
)

// TestStderrRedactsConfiguredEnv: a configured env value that the tool
// prints to standard error is redacted from the diagnostics tail.
func TestStderrRedactsConfiguredEnv(t *testing.T) {
	r := newRuntime(t, exec.Options{
		Command: []string{script(t, `read -r line
echo "api key is $API_KEY, mode $MODE" >&2
echo '{"type":"error","code":"com.example:x","message":"m","retryable":false}'`)},
		Env: []string{"API_KEY=sk-env-0123456789", "MODE=on"},
	})
	rec := runtimetest.NewRecorder()
	e := start(t, r, call("x", `{}`), rec)
	if rep := rec.Next(t, timeout); rep.Kind != runtimetest.KindFail {
		t.Fatalf("%+v", rep)
	}
	runtimetest.Wait(t, e, timeout)
	s := e.Diagnostics().Stderr
	if strings.Contains(s, "sk-env") || !strings.Contains(s, "api key is [redacted]") {
		t.Errorf("configured env value not redacted: %q", s)
	}
}

// TestFailureMessageRedacted: a failure message that repeats an argument
// string or a configured env value reaches the caller redacted.
func TestFailureMessageRedacted(t *testing.T) {
	r := newRuntime(t, exec.Options{
		Command: []string{script(t, `read -r line
printf '{"type":"error","code":"com.example:x","message":"bad key %s for %s","retryable":false}\n' "$API_KEY" "$(printf '%s' "$line" | sed -n 's/.*"user":"\([^"]*\)".*/\1/p')"`)},
		Env: []string{"API_KEY=sk-env-0123456789"},
	})
	rec := runtimetest.NewRecorder()
	e := start(t, r, call("x", `{"user":"alice-password-42"}`), rec)
	rep := rec.Next(t, timeout)
	if rep.Kind != runtimetest.KindFail {
		t.Fatalf("%+v", rep)
	}
	runtimetest.Wait(t, e, timeout)
	if m := rep.Failure.Message; m != "bad key [redacted] for [redacted]" {
		t.Errorf("failure message %q", m)
	}
}
