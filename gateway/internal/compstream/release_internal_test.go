//go:build linux

package compstream

import (
	"os"
	"testing"
)

// TestReleaseMemory: the executable's read-only mappings are found (a
// test binary has at least its text), holding no page of their own, and
// dropping them leaves a process that runs on: the test goes on after it.
func TestReleaseMemory(t *testing.T) {
	ms := readOnlyMappings()
	if len(ms) == 0 {
		t.Fatal("no read-only mapping of the executable found in /proc/self/smaps")
	}
	for _, m := range ms {
		if m.end <= m.start {
			t.Fatalf("bad mapping %x-%x", m.start, m.end)
		}
	}
	ReleaseMemory()
	ReleaseMemory()
	if _, err := os.Executable(); err != nil {
		t.Fatal(err)
	}
}
