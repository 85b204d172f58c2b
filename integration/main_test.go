// Package integration runs the built agentgw binary as a process against a
// real Prosody (home.example, with the component agents.example) and a real
// ejabberd (remote.example) federated over s2s, all on loopback, started by
// internal/harness.
//
// Environment:
//   - AGENTGW_REQUIRE_SERVERS=1 makes a missing server or peer a failure
//     instead of a skip (CI and scripts/test set it).
//   - AGENTGW_MCP_EVERYTHING and AGENTGW_MCP_INSPECTOR locate the MCP peers
//     (server-everything's dist/index.js, the inspector CLI).
//   - AGENTGW_BINARY=/path/to/agentgw runs that binary instead of building
//     one from the tree, so that the same tests and benchmarks measure two
//     builds (scripts/bench-compare). Unset, the tree is built.
package integration

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"agentgw/c2s"
	"agentgw/db"
	"agentgw/internal/harness"
	"agentgw/internal/pgtest"
	"agentgw/manifest"
	"agentgw/wire"

	"mellium.im/xmpp/jid"
)

const (
	password = "integration-pass"
	// numAgents is the size of the generated directory (besides weather).
	numAgents = 260
)

// suite is shared by the tests of this package: one set of servers, one
// binary, one gateway process.
var suite struct {
	skip    string
	env     *harness.Env
	dir     string
	bin     string
	config  string
	db      string
	gateway *gatewayProc
}

func TestMain(m *testing.M) {
	// The test binary is also the stdio MCP fixture server of the MCP
	// tests (mcp_test.go).
	if file := os.Getenv(mcpFixtureEnv); file != "" {
		os.Exit(serveMCPFixture(file))
	}
	// It is also the floor component of BenchmarkFloor.
	if os.Getenv(floorEnv) != "" {
		os.Exit(serveFloor())
	}
	code, err := setup()
	if err != nil {
		fmt.Fprintln(os.Stderr, "integration setup:", err)
		if suite.env != nil {
			fmt.Fprintln(os.Stderr, suite.env.LogTail(40))
		}
		code = 1
	}
	if code == 0 {
		code = m.Run()
	}
	teardown()
	// The throwaway PostgreSQL of the tests that asked for one.
	pgtest.Stop()
	os.Exit(code)
}

// requireServers makes missing servers a failure rather than a skip; CI
// sets it.
func requireServers() bool { return os.Getenv("AGENTGW_REQUIRE_SERVERS") != "" }

func setup() (int, error) {
	if _, err := exec.LookPath("prosody"); err != nil && !requireServers() {
		suite.skip = "prosody is not installed (set AGENTGW_REQUIRE_SERVERS=1 to fail instead)"
		return 0, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	var err error
	if suite.dir, err = os.MkdirTemp("", "agentgw-integration-"); err != nil {
		return 1, err
	}
	if suite.bin, err = agentgwBinary(ctx); err != nil {
		return 1, err
	}
	if suite.env, err = harness.Start(ctx, harness.Options{Ejabberd: true, Dir: filepath.Join(suite.dir, "servers")}); err != nil {
		return 1, err
	}
	for _, u := range []struct{ local, domain string }{
		{"alice", harness.HomeDomain}, {"admin", harness.HomeDomain},
		{"bob", harness.RemoteDomain}, {"carol", harness.RemoteDomain},
	} {
		if err := suite.env.Register(ctx, u.local, u.domain, password); err != nil {
			return 1, err
		}
	}
	suite.config = filepath.Join(suite.dir, "agentgw.toml")
	suite.db = filepath.Join(suite.dir, "agentgw.db")
	if pgtest.OnPostgres() {
		// Dropped with the throwaway cluster, after the last test.
		if suite.db, _, err = pgtest.Database(); err != nil {
			return 1, err
		}
	}
	if err := writeConfig(""); err != nil {
		return 1, err
	}
	if err := seedDirectory(ctx); err != nil {
		return 1, err
	}
	if suite.gateway, err = startGateway(ctx); err != nil {
		return 1, err
	}
	if pgtest.OnPostgres() && !strings.Contains(suite.gateway.logText(), `database="postgres://`) {
		return 1, fmt.Errorf("the PostgreSQL pass's gateway did not open PostgreSQL:\n%s", tail(suite.gateway.logText(), 10))
	}
	return 0, nil
}

// binaryEnv names a built agentgw for the suite to run instead of
// building the tree's.
const binaryEnv = "AGENTGW_BINARY"

// agentgwBinary returns the binary the suite runs: AGENTGW_BINARY if set
// (it must be an executable file), else the tree built into suite.dir.
func agentgwBinary(ctx context.Context) (string, error) {
	if bin := os.Getenv(binaryEnv); bin != "" {
		abs, err := filepath.Abs(bin)
		if err != nil {
			return "", err
		}
		info, err := os.Stat(abs)
		if err != nil {
			return "", fmt.Errorf("%s: %w", binaryEnv, err)
		}
		if !info.Mode().IsRegular() || info.Mode().Perm()&0o111 == 0 {
			return "", fmt.Errorf("%s=%s is not an executable file", binaryEnv, bin)
		}
		return abs, nil
	}
	bin := filepath.Join(suite.dir, "agentgw")
	build := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags=-s -w", "-o", bin, "..")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build: %v\n%s", err, out)
	}
	return bin, nil
}

func teardown() {
	if suite.gateway != nil {
		suite.gateway.stop()
	}
	if suite.env != nil {
		suite.env.Stop()
	}
	if suite.dir != "" {
		os.RemoveAll(suite.dir)
	}
}

// writeConfig writes the gateway's configuration; extra is appended TOML
// (more grants).
func writeConfig(extra string) error {
	body := fmt.Sprintf(`
[component]
domain = %q
server = %q
secret_file = "component.secret"
ping_interval = "5s"
ping_timeout = "3s"
reconnect_max = "2s"

[gateway]
name = "Integration Gateway"
# The benchmarks send thousands of requests a second from one account.
rate_limit = 100000
rate_burst = 100000
domain_rate_limit = 100000
domain_rate_burst = 100000

[database]
%s

[log]
level = "debug"

[policy]
local_domains = [%q]
admins = ["admin@%s"]
self_register = true

[[policy.visibility]]
principals = [%q]
endpoints = ["*"]
%s`, harness.ComponentDomain, suite.env.ComponentAddr, storeKey(), harness.HomeDomain, harness.HomeDomain, harness.HomeDomain, extra)
	if err := os.WriteFile(filepath.Join(suite.dir, "component.secret"), []byte(suite.env.ComponentSecret+"\n"), 0o600); err != nil {
		return err
	}
	return os.WriteFile(suite.config, []byte(body), 0o600)
}

// storeKey is the [database] key of the suite's configuration: SQLite's
// agentgw.db beside it, or in the PostgreSQL pass the suite's database.
func storeKey() string {
	if pgtest.OnPostgres() {
		return fmt.Sprintf("url = %q", suite.db)
	}
	return `path = "agentgw.db"`
}

// withStore returns the configuration cfg (the suite's, or one made from
// it) with its store replaced by key, a [database] line; t fails if cfg
// does not name the suite's store.
func withStore(t testing.TB, cfg, key string) string {
	t.Helper()
	if !strings.Contains(cfg, storeKey()) {
		t.Fatalf("the configuration does not hold %s:\n%s", storeKey(), cfg)
	}
	return strings.Replace(cfg, storeKey(), key, 1)
}

// ownStoreKey is the [database] key of a gateway of t's own, beside the
// suite's: agentgw.db beside its configuration, or in the PostgreSQL pass
// a new database, dropped when t ends.
func ownStoreKey(t testing.TB) string {
	t.Helper()
	if pgtest.OnPostgres() {
		return fmt.Sprintf("url = %q", pgtest.URL(t))
	}
	return `path = "agentgw.db"`
}

// mcpStoreKey is the [mcp] database key of an `agentgw mcp` of t's: the
// SQLite file name beside its configuration, or in the PostgreSQL pass a
// new database, dropped when t ends.
func mcpStoreKey(t testing.TB, name string) string {
	t.Helper()
	if pgtest.OnPostgres() {
		return fmt.Sprintf("database = %q", pgtest.URL(t))
	}
	return fmt.Sprintf("database = %q", name)
}

// onePass skips t in the PostgreSQL pass: t makes its own stores, on
// SQLite and on PostgreSQL whichever the pass, so the SQLite pass ran all
// of it.
func onePass(t testing.TB) {
	t.Helper()
	if pgtest.OnPostgres() {
		t.Skip("its stores do not depend on the pass; the SQLite pass ran it")
	}
}

// agentManifest is a generated endpoint's manifest.
func agentManifest(i int) string {
	return fmt.Sprintf(`{"manifestSpecVersion":"0","agent":{"jid":"agent-%03d@%s","name":"agent-%03d","title":"Agent %03d","version":"1.0.0"},"tools":[]}`,
		i, harness.ComponentDomain, i, i)
}

// seedDirectory registers the spec's weather manifest through the CLI, and
// numAgents generated endpoints in bulk through the store.
func seedDirectory(ctx context.Context) error {
	if out, err := agentgw(ctx, "endpoint", "register", "-config", suite.config, "-activate", "../testdata/manifest/weather.json"); err != nil {
		return fmt.Errorf("register weather: %v: %s", err, out)
	}
	manifests := make([]string, numAgents)
	for i := range manifests {
		manifests[i] = agentManifest(i)
	}
	return importManifests(ctx, suite.db, harness.ComponentDomain, manifests)
}

// importManifests registers and activates manifests of domain in the
// database at path, in bulk through the store. With AGENTGW_BINARY set
// the store is the binary's, whose schema may be older than the tree's
// (db.Open would migrate it past what that binary reads): the binary
// registers them itself (`endpoint register -activate DIR`).
func importManifests(ctx context.Context, path, domain string, manifests []string) error {
	if os.Getenv(binaryEnv) != "" {
		return registerWithBinary(ctx, path, domain, manifests)
	}
	store, err := db.Open(ctx, path)
	if err != nil {
		return err
	}
	defer store.Close()
	vs := make([]db.Version, 0, len(manifests))
	for _, raw := range manifests {
		m, err := manifest.Parse([]byte(raw), manifest.Options{Domain: domain})
		if err != nil {
			return err
		}
		vs = append(vs, db.Version{JID: m.JID, Version: m.Version, Hash: m.Hash, Canonical: m.Canonical, Name: m.Name, Title: m.Title})
	}
	return store.ImportVersions(ctx, vs, true)
}

// registerWithBinary runs `agentgw endpoint register -activate` on a
// directory of manifests, with a configuration naming only the database.
func registerWithBinary(ctx context.Context, path, domain string, manifests []string) error {
	dir, err := os.MkdirTemp(suite.dir, "import-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	mdir := filepath.Join(dir, "manifests")
	if err := os.Mkdir(mdir, 0o700); err != nil {
		return err
	}
	for i, raw := range manifests {
		if err := os.WriteFile(filepath.Join(mdir, fmt.Sprintf("%06d.json", i)), []byte(raw), 0o600); err != nil {
			return err
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "secret"), []byte("import-secret\n"), 0o600); err != nil {
		return err
	}
	key := fmt.Sprintf("url = %q", path)
	if !pgtest.OnPostgres() {
		abs, err := filepath.Abs(path)
		if err != nil {
			return err
		}
		key = fmt.Sprintf("path = %q", abs)
	}
	config := filepath.Join(dir, "import.toml")
	body := fmt.Sprintf("[component]\ndomain = %q\nserver = \"127.0.0.1:1\"\nsecret_file = \"secret\"\n\n[database]\n%s\n", domain, key)
	if err := os.WriteFile(config, []byte(body), 0o600); err != nil {
		return err
	}
	if out, err := agentgw(ctx, "endpoint", "register", "-config", config, "-activate", mdir); err != nil {
		return fmt.Errorf("endpoint register: %v: %s", err, tail(out, 10))
	}
	return nil
}

// agentgw runs the binary and returns its combined output.
func agentgw(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, suite.bin, args...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// gatewayProc is a running `agentgw serve`.
type gatewayProc struct {
	cmd  *exec.Cmd
	mu   sync.Mutex
	log  bytes.Buffer
	done chan struct{}
	ups  int
	upCh chan struct{}
}

// startGateway starts `agentgw serve` on the suite's configuration and
// waits for its component stream.
func startGateway(ctx context.Context) (*gatewayProc, error) {
	return startGatewayWith(ctx, suite.config)
}

// startGatewayWith starts `agentgw serve -config config` and waits for its
// component stream.
func startGatewayWith(ctx context.Context, config string) (*gatewayProc, error) {
	g := &gatewayProc{done: make(chan struct{}), upCh: make(chan struct{}, 16)}
	g.cmd = exec.Command(suite.bin, "serve", "-config", config)
	stderr, err := g.cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := g.cmd.Start(); err != nil {
		return nil, err
	}
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			g.mu.Lock()
			g.log.WriteString(line + "\n")
			if strings.Contains(line, "component stream up") {
				g.ups++
				select {
				case g.upCh <- struct{}{}:
				default: // nobody is waiting for that many reconnects
				}
			}
			g.mu.Unlock()
		}
		g.cmd.Wait()
		close(g.done)
	}()
	if err := g.waitUp(ctx); err != nil {
		// Stopped, or a gateway that connects late would hold the
		// component and every later start would get <conflict/>.
		g.stop()
		return nil, fmt.Errorf("%w\n%s", err, g.logText())
	}
	return g, nil
}

// waitUp waits for the next "component stream up".
func (g *gatewayProc) waitUp(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	select {
	case <-g.upCh:
		return nil
	case <-g.done:
		return fmt.Errorf("agentgw serve exited")
	case <-ctx.Done():
		return fmt.Errorf("agentgw serve: no component stream: %w", ctx.Err())
	}
}

func (g *gatewayProc) logText() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.log.String()
}

func (g *gatewayProc) signal(sig syscall.Signal) error { return g.cmd.Process.Signal(sig) }

func (g *gatewayProc) stop() {
	g.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-g.done:
	case <-time.After(10 * time.Second):
		g.cmd.Process.Kill()
		<-g.done
	}
}

// restartGateway stops the running `agentgw serve` as an operator would
// (SIGTERM) and starts a new one on the same configuration and database;
// suite.gateway points at the live process afterwards. It returns the old
// process's log, whose shutdown lines the new process does not have.
func restartGateway(ctx context.Context) (string, error) {
	old := suite.gateway
	old.stop()
	g, err := startGateway(ctx)
	if err != nil {
		return old.logText(), err
	}
	suite.gateway = g
	return old.logText(), nil
}

// need skips a test when the servers are not installed.
func need(t testing.TB) {
	t.Helper()
	if suite.skip != "" {
		t.Skip(suite.skip)
	}
}

// login connects a test user on its home server.
func login(t testing.TB, local, domain string) *c2s.Client {
	t.Helper()
	addr := suite.env.ProsodyC2S
	if domain == harness.RemoteDomain {
		addr = suite.env.EjabberdC2S
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := c2s.Dial(ctx, addr, jid.MustParse(local+"@"+domain), password)
	if err != nil {
		t.Fatalf("login %s@%s: %v", local, domain, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// iq sends an IQ and parses the answer.
func iq(t testing.TB, c *c2s.Client, typ, to, payload string) (wire.Element, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	raw, err := c.IQ(ctx, typ, to, payload)
	if err != nil {
		t.Fatalf("iq to %s: %v\ngateway log tail:\n%s", to, err, tail(suite.gateway.logText(), 20))
	}
	el, err := wire.Parse(raw)
	if err != nil {
		t.Fatalf("parse %q: %v", raw, err)
	}
	return el, raw
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

var addrAttr = regexp.MustCompile(`\s(id|from|to)=("[^"]*"|'[^']*')`)

// stripAddrs removes id, from and to from the outer element of a stanza, so
// two answers can be compared byte for byte.
// stanzaText writes a stanza received on Incoming as XML text
// (wire.AppendXML: attributes in the order received, single quotes), for
// the checks that read it as text.
func stanzaText(t testing.TB, el wire.Element) string {
	t.Helper()
	b, err := wire.AppendXML(nil, el.Reader())
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func stripAddrs(raw string) string {
	end := strings.Index(raw, ">")
	if end < 0 {
		return raw
	}
	return addrAttr.ReplaceAllString(raw[:end], "") + raw[end:]
}

// useConfig adds extra to the suite's configuration and restarts the
// gateway with it. When the test ends, the suite's configuration comes
// back, the gateway restarts again, and endpoints (those extra hosts) are
// deactivated, so that the next test sees the suite's own directory.
func useConfig(t *testing.T, extra string, endpoints ...string) {
	t.Helper()
	if err := writeConfig(extra); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		if err := writeConfig(""); err != nil {
			t.Error(err)
		}
		if _, err := restartGateway(ctx); err != nil {
			t.Errorf("restart: %v", err)
		}
		for _, ep := range endpoints {
			if out, err := agentgw(ctx, "endpoint", "deactivate", "-config", suite.config, ep); err != nil {
				t.Errorf("deactivate %s: %v %s", ep, err, out)
			}
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := restartGateway(ctx); err != nil {
		t.Fatalf("restart with the test's configuration: %v", err)
	}
}
