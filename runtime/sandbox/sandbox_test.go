package sandbox_test

import (
	"bytes"
	"fmt"
	"net"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"agentgw/runtime/sandbox"
)

func TestMain(m *testing.M) {
	sandbox.RunIfHelper()
	os.Exit(m.Run())
}

// probe is a shell tool that tries one thing per line and prints
// "name ok" or "name denied".
const probe = `#!/bin/sh
try() { name=$1; shift; if "$@" >/dev/null 2>&1; then echo "$name ok"; else echo "$name denied"; fi; }
try read_secret cat "$SECRET"
try read_state ls "$STATE"
try read_other cat "$OTHER/file"
try write_work sh -c 'echo x > "$PWD/out" && echo y > "$TMPDIR/t"'
try write_outside sh -c 'echo x > "$OUTSIDE/planted"'
try read_granted cat "$GRANTED/file"
try read_system cat /etc/hostname
try signal kill -0 "$GATEWAY_PID"
echo "nofile $(ulimit -n)"
try connect python3 -c 'import socket,os; socket.create_connection(("127.0.0.1", int(os.environ["PORT"])), timeout=2)'
`

// run starts the probe with rules r and returns its verdicts by name.
func run(t *testing.T, r sandbox.Rules, env ...string) map[string]string {
	t.Helper()
	dir := t.TempDir()
	prog := filepath.Join(dir, "probe.sh")
	if err := os.WriteFile(prog, []byte(probe), 0o755); err != nil {
		t.Fatal(err)
	}
	r.Read = append(r.Read, prog)
	cmd := osexec.Command(prog)
	cmd.Dir = r.Work
	cmd.Env = append([]string{"PATH=/usr/local/bin:/usr/bin:/bin"}, env...)
	if err := r.Wrap(cmd, os.Args[0]); err != nil {
		t.Fatal(err)
	}
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("probe: %v; stderr: %s", err, stderr.String())
	}
	got := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		name, verdict, _ := strings.Cut(line, " ")
		got[name] = verdict
	}
	return got
}

// TestConfined: a sandboxed child writes its work directory and reads the
// system and what it was granted, and nothing else: not a protected file
// inside a granted directory, not the state directory, not another tool's
// directory; it cannot write outside, signal its parent, or connect.
func TestConfined(t *testing.T) {
	if sandbox.ABI() < sandbox.MinRequiredABI {
		t.Skipf("Landlock ABI %d", sandbox.ABI())
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	state := t.TempDir()
	work := filepath.Join(state, "run", "me")
	other := filepath.Join(state, "run", "other")
	granted := t.TempDir()
	secret := filepath.Join(granted, "component.secret")
	outside := t.TempDir()
	for _, d := range []string{work, other} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{filepath.Join(other, "file"), filepath.Join(granted, "file"), secret} {
		if err := os.WriteFile(f, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	env := []string{"SECRET=" + secret, "STATE=" + state, "OTHER=" + other, "OUTSIDE=" + outside, "GRANTED=" + granted,
		fmt.Sprintf("GATEWAY_PID=%d", os.Getpid()), fmt.Sprintf("PORT=%d", ln.Addr().(*net.TCPAddr).Port)}
	rules := sandbox.Rules{Landlock: true, Network: true, Work: work, Read: []string{granted}, Protected: sandbox.Resolve(secret, state)}

	got := run(t, rules, env...)
	want := map[string]string{
		"read_secret": "denied", "read_state": "denied", "read_other": "denied",
		"write_work": "ok", "write_outside": "denied", "read_granted": "ok", "read_system": "ok",
		"signal": "denied", "connect": "ok",
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %s, want %s", k, got[k], v)
		}
	}
	if _, err := os.Stat(filepath.Join(outside, "planted")); err == nil {
		t.Error("the child wrote outside its directory")
	}

	rules.Network = false
	if got := run(t, rules, env...); got["connect"] != "denied" {
		t.Errorf("connect with network off: %s", got["connect"])
	}
	rules.Network = true
	if got := run(t, rules, env...); got["connect"] != "ok" {
		t.Errorf("connect with network on: %s", got["connect"])
	}
}

// TestUnconfined: without Landlock the same probe reaches everything (so
// TestConfined can fail), and the limits still apply.
func TestUnconfined(t *testing.T) {
	state := t.TempDir()
	secret := filepath.Join(state, "component.secret")
	if err := os.WriteFile(secret, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	got := run(t, sandbox.Rules{Work: work, Network: true, Protected: []string{state}, Limits: sandbox.Limits{OpenFiles: 77}},
		"SECRET="+secret, "STATE="+state, fmt.Sprintf("GATEWAY_PID=%d", os.Getpid()))
	if got["read_secret"] != "ok" || got["signal"] != "ok" {
		t.Errorf("unconfined probe: %v", got)
	}
	if got["nofile"] != "77" {
		t.Errorf("open files limit %s, want 77", got["nofile"])
	}
}

// TestExecWaitsForReplacedProgram: a program missing when the helper
// execs it (an upgrade in place, between a remove and a rename) is
// started once it is back, within the helper's wait.
func TestExecWaitsForReplacedProgram(t *testing.T) {
	dir := t.TempDir()
	prog := filepath.Join(dir, "tool.sh")
	cmd := osexec.Command(prog)
	cmd.Dir = t.TempDir()
	// The program is granted as itself only: the helper must wait for it
	// before it builds its rules.
	r := sandbox.Rules{Landlock: sandbox.ABI() > 0, Network: true, Work: cmd.Dir}
	if err := r.Wrap(cmd, os.Args[0]); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	tmp := prog + ".new"
	if err := os.WriteFile(tmp, []byte("#!/bin/sh\necho replaced\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, prog); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil || strings.TrimSpace(out.String()) != "replaced" {
		t.Errorf("helper: %v, output %q", err, out.String())
	}
}
