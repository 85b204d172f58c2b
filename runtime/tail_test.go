package runtime_test

import (
	"strings"
	"testing"

	"agentgw/runtime"
)

func TestTail(t *testing.T) {
	tl := &runtime.Tail{Max: 16}
	tl.Write([]byte("first line is long\nsecret=hunter22\n\x01end\n"))
	got := tl.Text(func(s string) string { return strings.ReplaceAll(s, "hunter22", "[redacted]") })
	if strings.Contains(got, "hunter22") || strings.Contains(got, "first") || !strings.HasPrefix(got, "[earlier output dropped]") || !strings.Contains(got, "\uFFFDend") {
		t.Fatalf("Text = %q", got)
	}
	short := &runtime.Tail{Max: 100}
	short.Write([]byte("  ok \xff\n"))
	if got := short.Text(nil); got != "ok \uFFFD" {
		t.Fatalf("Text = %q", got)
	}
}
