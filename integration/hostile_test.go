package integration

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"agentgw/internal/harness"
	"agentgw/task"
	"agentgw/wire"
)

// The endpoint of the wire size test: an exec tool whose results grow
// when XML-escaped (testdata/hostile/bigresult-tool.sh).
const (
	bigEndpoint = "big@" + harness.ComponentDomain
	bigManifest = "../testdata/hostile/bigresult-tool.manifest.json"
)

// withBigEndpoint configures the big endpoint and alice's grant for it,
// restarts the gateway, and restores the suite's configuration at the end.
func withBigEndpoint(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	tool, err := filepath.Abs("../testdata/hostile/bigresult-tool.sh")
	if err != nil {
		t.Fatal(err)
	}
	extra := fmt.Sprintf(`
[[endpoint]]
jid = %[1]q
runtime = "exec"
command = [%[2]q]

[[policy.invoke]]
principals = [%[3]q]
endpoints = [%[1]q]
tools = ["*"]
`, bigEndpoint, tool, harness.HomeDomain)
	if out, err := agentgw(ctx, "endpoint", "register", "-config", suite.config, "-activate", bigManifest); err != nil {
		t.Fatalf("register big: %v %s", err, out)
	}
	useConfig(t, extra, bigEndpoint)
}

// TestWireSize: through a real Prosody, a result of 200 KiB of '"' and
// '<' settles failed with task.CodeResultTooLarge and the caller is told
// why; a result that escapes to 385 KB still arrives whole; no stanza the
// client receives exceeds wire.MaxStanzaBytes, and Prosody never closes
// the component stream (it would past its 512 KiB limit).
func TestWireSize(t *testing.T) {
	need(t)
	withBigEndpoint(t)
	ups := func() int {
		suite.gateway.mu.Lock()
		defer suite.gateway.mu.Unlock()
		return suite.gateway.ups
	}
	before := ups()
	w := newTaskWire(t)
	for _, tc := range []struct {
		pairs int
		want  string
	}{
		{100 << 10, "failed: " + task.CodeResultTooLarge + ": "}, // 200 KiB of " and <
		{60_000, "failed: " + task.CodeResultTooLarge + ": "},    // 180 KB of JSON, 600 KB escaped
		{35_000, "] completed"},                                  // 105 KB of JSON, 385 KB escaped by Go
	} {
		p := startClient(t, "alice", harness.HomeDomain, "call", bigEndpoint, "big.emit", fmt.Sprintf(`{"pairs":%d}`, tc.pairs))
		out, errs, err := p.wait(t, 3*time.Minute)
		if !strings.Contains(out, tc.want) {
			t.Fatalf("%d pairs: want %q in the output; err %v\n%s%s", tc.pairs, tc.want, err, out, errs)
		}
		largest := checkTraceSizes(t, p.trace)
		t.Logf("%d pairs: %.160s; largest stanza received %d bytes", tc.pairs, strings.TrimSpace(lastLine(out)), largest)
		// Prosody writes '"' in text unescaped: 35,000 pairs arrive as
		// 210 KB (\"&lt; each).
		if tc.pairs == 35_000 && largest < 200_000 {
			t.Errorf("the completed result arrived in a %d-byte stanza, expected it whole", largest)
		}
		w.trace(p.trace)
	}
	if n := ups() - before; n != 0 {
		t.Errorf("the component stream went down %d times:\n%s", n, tail(suite.gateway.logText(), 20))
	}
}

// checkTraceSizes fails the test if any stanza in an `agentgw client
// -trace` file is over wire.MaxStanzaBytes, and returns the largest.
func checkTraceSizes(t *testing.T, file string) int {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 4<<20)
	largest := 0
	for sc.Scan() {
		var line struct{ XML string }
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatalf("trace line: %v", err)
		}
		if n := len(line.XML); n > largest {
			largest = n
		}
		if len(line.XML) > wire.MaxStanzaBytes {
			t.Errorf("received a %d-byte stanza, over %d", len(line.XML), wire.MaxStanzaBytes)
		}
	}
	return largest
}

func lastLine(s string) string {
	s = strings.TrimRight(s, "\n")
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}
