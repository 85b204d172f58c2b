package app

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"agentgw/metrics"
)

// TestAnnounce: without Landlock the gateway warns once and the gauge says
// 0; with it, the gauge says the ABI.
func TestAnnounce(t *testing.T) {
	var log bytes.Buffer
	l := slog.New(slog.NewTextHandler(&log, nil))
	(&SandboxPlan{ABI: 0}).announce("best-effort", true, l)
	var m bytes.Buffer
	metrics.SandboxABI.WriteText(&m)
	if !strings.Contains(m.String(), "agentgw_sandbox_landlock_abi 0\n") {
		t.Errorf("gauge without Landlock:\n%s", m.String())
	}
	if n := strings.Count(log.String(), "level=WARN"); n != 1 || !strings.Contains(log.String(), "unsandboxed") {
		t.Errorf("want one warning that children run unsandboxed, got:\n%s", log.String())
	}
	(&SandboxPlan{ABI: 7}).announce("required", true, l)
	m.Reset()
	metrics.SandboxABI.WriteText(&m)
	if !strings.Contains(m.String(), "agentgw_sandbox_landlock_abi 7\n") {
		t.Errorf("gauge with ABI 7:\n%s", m.String())
	}
}
