package cli_test

import (
	"runtime"
	"strings"
	"testing"
)

// TestVersion: the version command prints the Go version the binary was
// built with and its build settings (a test binary has GOOS and GOARCH
// among them, like any binary).
func TestVersion(t *testing.T) {
	code, out, errs := run(t, "version")
	if code != 0 {
		t.Fatalf("code %d: %s", code, errs)
	}
	for _, want := range []string{"agentgw ", "\ncommit: ", "\ngo: " + runtime.Version() + "\n", "\nbuild:\n", "\nlandlock: ", "  GOOS=" + runtime.GOOS + "\n", "  GOARCH=" + runtime.GOARCH + "\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("version output lacks %q:\n%s", want, out)
		}
	}
}
