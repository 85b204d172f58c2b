package app_test

import (
	"os"
	"testing"

	"agentgw/runtime/sandbox"
)

// TestMain lets this test binary serve as the sandbox helper of the
// children its tests start (app.SandboxPlan.Helper).
func TestMain(m *testing.M) {
	sandbox.RunIfHelper()
	os.Exit(m.Run())
}
