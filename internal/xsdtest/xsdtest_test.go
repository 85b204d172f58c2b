package xsdtest_test

import (
	"os/exec"
	"testing"

	"agentgw/internal/xsdtest"
)

// TestValidateRejects: the check really validates, so a document the
// schema forbids fails and one it allows passes.
func TestValidateRejects(t *testing.T) {
	if _, err := exec.LookPath("xmllint"); err != nil {
		t.Skip("xmllint is not installed")
	}
	schema := "../../testdata/agent-task.xsd"
	good := `<task-state-request xmlns='urn:xmpp:agent-task:0' task-id='task-0123456789abcdef0123456789abcdef'/>`
	bad := `<task-state-request xmlns='urn:xmpp:agent-task:0' bogus='1'/>`
	if err := xsdtest.Validate(schema, []string{good}); err != nil {
		t.Fatalf("valid document refused: %v", err)
	}
	if err := xsdtest.Validate(schema, []string{good, bad}); err == nil {
		t.Fatal("invalid document accepted")
	}
}
