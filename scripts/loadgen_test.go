package scripts_test

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestLoadgen keeps scripts/loadgen working (issue 26's independent load
// generator; scripts/loadgen/run is the benchmark, and asserts no figure):
// the generator's own tests, then two seconds of flood against the built
// gateway with BenchmarkCeiling's configuration, one against the trivial
// responder answering with what the gateway answered, one after the
// gateway has pinged the generator, and one to an endpoint that does not
// exist. Every answer must match a request, none may
// be lost, and only the last run may (and must) count errors.
func TestLoadgen(t *testing.T) {
	if testing.Short() {
		t.Skip("builds agentgw and floods it")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		if os.Getenv("AGENTGW_REQUIRE_SERVERS") != "" {
			t.Fatal("node is not installed, and AGENTGW_REQUIRE_SERVERS is set")
		}
		t.Skip("node is not installed")
	}
	// A safety stop, not a speed claim: the builds and node starts below
	// took over 3 minutes with two suites running at once.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	if out, err := exec.CommandContext(ctx, node, "--test", "loadgen/loadgen.test.js").CombinedOutput(); err != nil {
		t.Fatalf("node --test loadgen/loadgen.test.js: %v\n%s", err, out)
	}

	dir := t.TempDir()
	gw, trivial := filepath.Join(dir, "agentgw"), filepath.Join(dir, "trivial")
	for _, b := range [][2]string{{gw, ".."}, {trivial, "./loadgen/trivial"}} {
		if out, err := exec.CommandContext(ctx, "go", "build", "-o", b[0], b[1]).CombinedOutput(); err != nil {
			t.Fatalf("go build %s: %v\n%s", b[1], err, out)
		}
	}
	write := func(name, body string) string {
		t.Helper()
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	secret := write("secret", "loadgen-test-secret\n")
	if err := os.Mkdir(filepath.Join(dir, "manifests"), 0o700); err != nil {
		t.Fatal(err)
	}
	write("manifests/bench-000123.json", `{"manifestSpecVersion":"0","agent":{"jid":"bench-000123@agents.example","name":"bench-000123","title":"Agent 000123","version":"1.0.0"},"tools":[]}`)
	config := func(port, ping string) string {
		return write("agentgw.toml", `
[component]
domain = "agents.example"
server = "127.0.0.1:`+port+`"
secret_file = "secret"
`+ping+`

[gateway]
rate_limit = 0
domain_rate_limit = 0

[database]
path = "agentgw.db"

[policy]
local_domains = ["home.example"]
[[policy.visibility]]
principals = ["home.example"]
endpoints = ["*"]
`)
	}
	if out, err := exec.CommandContext(ctx, gw, "endpoint", "register", "-config", config("5347", ""), "-activate", filepath.Join(dir, "manifests")).CombinedOutput(); err != nil {
		t.Fatalf("register: %v\n%s", err, out)
	}
	payload := filepath.Join(dir, "payload.xml")

	// run floods a component started by start (given the generator's
	// port) and returns the generator's result fields and whether it
	// exited 0 (a clean run).
	run := func(to string, seconds string, extra []string, start func(port string) *exec.Cmd) (map[string]int, bool) {
		t.Helper()
		portFile := filepath.Join(dir, "port")
		os.Remove(portFile)
		args := append([]string{"loadgen/loadgen.js", "-domain", "agents.example", "-secret-file", secret,
			"-to", to, "-warmup", "0.3", "-duration", seconds, "-port-file", portFile,
			"-expect", "urn:xmpp:agent-endpoint-info:0"}, extra...)
		gen := exec.CommandContext(ctx, node, args...)
		stdout, err := gen.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		var stderr strings.Builder
		gen.Stderr = &stderr
		if err := gen.Start(); err != nil {
			t.Fatal(err)
		}
		// Node's start is slow on a busy machine (over 10 s was seen with
		// two suites at once): wait for the port file as long as the
		// test's own bound allows, not for a few seconds.
		var port []byte
		for deadline := time.Now().Add(2 * time.Minute); ctx.Err() == nil && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			if port, err = os.ReadFile(portFile); err == nil {
				break
			}
		}
		if err != nil {
			gen.Process.Kill()
			gen.Wait()
			t.Fatalf("the generator did not listen: %s", stderr.String())
		}
		comp := start(strings.TrimSpace(string(port)))
		var compErr strings.Builder
		comp.Stderr = &compErr
		if err := comp.Start(); err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(stdout)
		var line string
		for sc.Scan() {
			line = sc.Text()
		}
		werr := gen.Wait()
		comp.Process.Kill()
		comp.Wait()
		t.Logf("%s: %s", to, line)
		fields := map[string]int{}
		for _, kv := range strings.Fields(line) {
			k, v, _ := strings.Cut(kv, "=")
			if n, err := strconv.Atoi(v); err == nil {
				fields[k] = n
			}
		}
		if fields["answered"] == 0 || fields["window_answers"] == 0 {
			t.Fatalf("no answers: %q\ngenerator: %s\ncomponent: %s", line, stderr.String(), compErr.String())
		}
		// Whatever the run, each answer matched one request and none is
		// missing.
		for _, k := range []string{"unmatched", "misrouted", "lost"} {
			if fields[k] != 0 {
				t.Errorf("%s: %s=%d: %s", to, k, fields[k], stderr.String())
			}
		}
		if fields["answered"] != fields["sent"] || fields["results"]+fields["errors"] != fields["answered"] {
			t.Errorf("%s: sent %d, answered %d = %d results + %d errors", to, fields["sent"], fields["answered"], fields["results"], fields["errors"])
		}
		return fields, werr == nil
	}
	gateway := func(port string) *exec.Cmd {
		return exec.CommandContext(ctx, gw, "serve", "-config", config(port, `ping_interval = "1h"`))
	}

	g, clean := run("bench-000123@agents.example", "2", []string{"-capture", payload, "-label", "gateway"}, gateway)
	if !clean || g["errors"] != 0 || g["bad"] != 0 || g["results"] != g["sent"] {
		t.Errorf("gateway: not a clean run: %v", g)
	}

	tr, clean := run("bench-000123@agents.example", "1", []string{"-label", "trivial"}, func(port string) *exec.Cmd {
		return exec.CommandContext(ctx, trivial, "-server", "127.0.0.1:"+port, "-domain", "agents.example",
			"-secret-file", secret, "-payload", payload)
	})
	if !clean || tr["errors"] != 0 || tr["bad"] != 0 {
		t.Errorf("trivial: not a clean run: %v", tr)
	}
	// answer_bytes is a mean, and the ids are counters: a run that sends
	// more has longer ids on average, so the two may differ by a byte or
	// two while the payloads are the same bytes.
	if d := tr["answer_bytes"] - g["answer_bytes"]; d < -3 || d > 3 {
		t.Errorf("the trivial responder's answers are %d bytes, the gateway's %d", tr["answer_bytes"], g["answer_bytes"])
	}

	// The gateway's own keepalive pings, 0.2 s after its last input, are
	// answered as a server would: unanswered, they would drop the stream
	// 0.5 s later, before the load starts.
	p, clean := run("bench-000123@agents.example", "0.5", []string{"-idle", "2", "-label", "pinged"}, func(port string) *exec.Cmd {
		return exec.CommandContext(ctx, gw, "serve", "-config", config(port, "ping_interval = \"200ms\"\nping_timeout = \"500ms\""))
	})
	if !clean || p["served"] < 2 {
		t.Errorf("keepalive pings: %d answered, clean %v", p["served"], clean)
	}

	// An endpoint that does not exist: every answer is an error, and the
	// generator says so.
	e, clean := run("nobody@agents.example", "0.5", []string{"-label", "missing"}, gateway)
	if clean || e["errors"] != e["answered"] || e["results"] != 0 {
		t.Errorf("missing endpoint: errors not counted: %v (clean %v)", e, clean)
	}
}
