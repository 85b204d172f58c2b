// Package pgtest gives tests a PostgreSQL database of their own.
//
// If AGENTGW_TEST_POSTGRES names a URL, every database is created on that
// server (its user needs CREATEDB). Otherwise, if Debian's postgresql is
// installed, the first test that asks starts a throwaway cluster (initdb
// in a temporary directory, on 127.0.0.1 at a free port, never the system
// service; as root it runs as postgres), which dies with the test binary
// (stop it from TestMain). With neither, a test that asks is skipped, or
// fails under AGENTGW_REQUIRE_SERVERS=1. The cluster runs with fsync off
// (the tests check what the store commits, not the disk); set
// AGENTGW_PGTEST_FSYNC=on for benchmarks that compare durable commits.
package pgtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// EnvURL names the server to use instead of a throwaway cluster.
const EnvURL = "AGENTGW_TEST_POSTGRES"

var (
	mu      sync.Mutex
	started bool
	admin   string // URL of the maintenance database, or ""
	reason  string // why there is no server, if admin is ""
	cluster *throwaway
	serial  atomic.Int64
)

// Available starts the server if need be and reports whether there is one,
// and if not, why.
func Available() (bool, string) {
	mu.Lock()
	defer mu.Unlock()
	if !started {
		started = true
		admin, reason = start()
	}
	return admin != "", reason
}

// URL returns the URL of a new, empty database for t, dropped when t ends.
// With no server it skips t, or fails it under AGENTGW_REQUIRE_SERVERS=1.
func URL(t testing.TB) string {
	t.Helper()
	if ok, why := Available(); !ok {
		if os.Getenv("AGENTGW_REQUIRE_SERVERS") != "" {
			t.Fatalf("no PostgreSQL: %s", why)
		}
		t.Skipf("no PostgreSQL: %s (set AGENTGW_REQUIRE_SERVERS=1 to fail instead)", why)
	}
	u, drop, err := Database()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := drop(); err != nil {
			t.Log(err)
		}
	})
	return u
}

// Database creates a new, empty database outside any one test (a suite's
// TestMain) and returns its URL and the function that drops it. It fails
// when there is no server, saying why.
func Database() (string, func() error, error) {
	if ok, why := Available(); !ok {
		return "", nil, fmt.Errorf("no PostgreSQL: %s", why)
	}
	name := fmt.Sprintf("agentgw_test_%d_%d", os.Getpid(), serial.Add(1))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := adminExec(ctx, "CREATE DATABASE "+name+" TEMPLATE template0 ENCODING 'UTF8'"); err != nil {
		return "", nil, fmt.Errorf("pgtest: create database: %w", err)
	}
	drop := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := adminExec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			return fmt.Errorf("pgtest: drop database %s: %w", name, err)
		}
		return nil
	}
	return withDatabase(admin, name), drop, nil
}

// Stop stops the throwaway cluster, if one was started, and removes it.
func Stop() {
	mu.Lock()
	defer mu.Unlock()
	if cluster != nil {
		cluster.stop()
		cluster = nil
		admin = ""
		reason = "stopped"
	}
}

// adminExec runs one statement on the maintenance database.
func adminExec(ctx context.Context, stmt string) error {
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, stmt)
	return err
}

// withDatabase returns rawURL naming database name.
func withDatabase(rawURL, name string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return rawURL
	}
	u.Path = "/" + name
	u.RawPath = ""
	return u.String()
}

// start finds or starts a server and returns its maintenance URL, or "" and
// why there is none.
func start() (string, string) {
	if u := os.Getenv(EnvURL); u != "" {
		return withDatabase(u, "postgres"), ""
	}
	bins, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	if len(bins) == 0 {
		return "", "neither " + EnvURL + " nor /usr/lib/postgresql/*/bin/initdb (apt-get install postgresql)"
	}
	sort.Strings(bins)
	c, err := startCluster(filepath.Dir(bins[len(bins)-1]))
	if err != nil {
		return "", "starting a throwaway cluster: " + err.Error()
	}
	cluster = c
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", c.port), ""
}

// throwaway is a cluster started by startCluster.
type throwaway struct {
	dir  string
	port int
	cmd  *exec.Cmd // the postmaster
	done chan struct{}
	// bin and cred start the postmaster again (Restart).
	bin  string
	cred *syscall.Credential
}

// command returns the program prog of bin, as the postgres user if we are
// root (initdb and postgres refuse to run as root), killed with SIGQUIT,
// PostgreSQL's immediate shutdown, if this process dies first: a test
// binary that panics or times out leaves no server behind.
func command(bin string, cred *syscall.Credential, prog string, args ...string) *exec.Cmd {
	cmd := exec.Command(filepath.Join(bin, prog), args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGQUIT}
	return cmd
}

func startCluster(bin string) (*throwaway, error) {
	dir, err := os.MkdirTemp("", "agentgw-pg-")
	if err != nil {
		return nil, err
	}
	var cred *syscall.Credential
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("running as root, and there is no postgres user: %w", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
		cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	}
	data := filepath.Join(dir, "data")
	if out, err := command(bin, cred, "initdb", "-A", "trust", "-U", "postgres", "-E", "UTF8", "--locale=C", "--no-sync", "-D", data).CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("initdb: %v: %s", err, out)
	}
	port, err := freePort()
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	c := &throwaway{dir: dir, port: port, bin: bin, cred: cred}
	if err := c.launch(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return c, nil
}

// launch starts the postmaster on c's data and port and waits until it
// accepts connections.
func (c *throwaway) launch() error {
	fsync := "off"
	if os.Getenv("AGENTGW_PGTEST_FSYNC") == "on" {
		fsync = "on"
	}
	logFile, err := os.OpenFile(filepath.Join(c.dir, "log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer logFile.Close()
	cmd := command(c.bin, c.cred, "postgres", "-D", filepath.Join(c.dir, "data"), "-p", strconv.Itoa(c.port), "-k", c.dir,
		"-c", "listen_addresses=127.0.0.1", "-c", "fsync="+fsync, "-c", "max_connections=200")
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		return err
	}
	c.cmd, c.done = cmd, make(chan struct{})
	done := c.done
	go func() { cmd.Wait(); close(done) }()
	url := fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable&connect_timeout=2", c.port)
	for deadline := time.Now().Add(60 * time.Second); ; {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		conn, err := pgx.Connect(ctx, url)
		cancel()
		if err == nil {
			conn.Close(context.Background())
			return nil
		}
		select {
		case <-done:
			log, _ := os.ReadFile(filepath.Join(c.dir, "log"))
			return fmt.Errorf("postgres exited: %s", log)
		default:
		}
		if time.Now().After(deadline) {
			c.halt()
			return fmt.Errorf("postgres did not accept connections within 60 s: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// halt stops the postmaster at once (SIGQUIT: immediate shutdown, as a
// crash leaves the data) and waits for it.
func (c *throwaway) halt() {
	c.cmd.Process.Signal(syscall.SIGQUIT)
	select {
	case <-c.done:
	case <-time.After(30 * time.Second):
		c.cmd.Process.Kill()
		<-c.done
	}
}

// own locks mu and returns the throwaway cluster, for a test to do to it
// what its caller does; the caller unlocks mu. It fails t, unlocked, when
// the server is not one pgtest started (AGENTGW_TEST_POSTGRES).
func own(t testing.TB, what string) *throwaway {
	t.Helper()
	mu.Lock()
	if cluster == nil {
		mu.Unlock()
		t.Fatalf("pgtest: no throwaway cluster to %s (%s names a server of its own)", what, EnvURL)
	}
	return cluster
}

// Restart stops the throwaway cluster as a crash would (immediate
// shutdown, no checkpoint), waits pause, and starts it again on the same
// data and port, where it recovers from its log. It fails t when the
// server is not one pgtest started (AGENTGW_TEST_POSTGRES).
func Restart(t testing.TB, pause time.Duration) {
	t.Helper()
	c := own(t, "restart")
	defer mu.Unlock()
	c.halt()
	time.Sleep(pause)
	if err := c.launch(); err != nil {
		t.Fatalf("pgtest: restart: %v", err)
	}
}

// Freeze stops the throwaway cluster's postmaster (SIGSTOP) until t ends,
// as a hung server or a half-open path looks from outside: the kernel
// still accepts connections into the listen queue, and nothing answers
// them. Connections opened before go on, served by their own backends. It
// fails t when the server is not one pgtest started.
func Freeze(t testing.TB) {
	t.Helper()
	c := own(t, "freeze")
	defer mu.Unlock()
	p := c.cmd.Process
	if err := p.Signal(syscall.SIGSTOP); err != nil {
		t.Fatalf("pgtest: freeze: %v", err)
	}
	t.Cleanup(func() { p.Signal(syscall.SIGCONT) })
}

// Hang stops every process of the throwaway cluster (SIGSTOP: the
// postmaster and each backend) for pause, then lets them go on, as a
// server that hangs (starved, swapped out, a stalled disk) looks from
// outside: connections stay open and nothing is answered. It fails t when
// the server is not one pgtest started.
func Hang(t testing.TB, pause time.Duration) {
	t.Helper()
	c := own(t, "hang")
	defer mu.Unlock()
	root := c.cmd.Process.Pid
	stopped := []int{root}
	if err := syscall.Kill(root, syscall.SIGSTOP); err != nil {
		t.Fatalf("pgtest: hang: %v", err)
	}
	// The backends, stopped after the postmaster so that it forks no more.
	for _, pid := range children(root) {
		if syscall.Kill(pid, syscall.SIGSTOP) == nil {
			stopped = append(stopped, pid)
		}
	}
	time.Sleep(pause)
	for _, pid := range stopped {
		syscall.Kill(pid, syscall.SIGCONT)
	}
}

// children returns the pids of the processes whose parent is pid.
func children(pid int) []int {
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces and parentheses.
		i := strings.LastIndexByte(string(stat), ')')
		if i < 0 {
			continue
		}
		fields := strings.Fields(string(stat[i+1:]))
		if len(fields) > 1 && fields[1] == strconv.Itoa(pid) {
			out = append(out, child)
		}
	}
	return out
}

// stop shuts the cluster down at once and removes it.
func (c *throwaway) stop() {
	c.halt()
	os.RemoveAll(c.dir)
}

// freePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	addr, ok := l.Addr().(*net.TCPAddr)
	if !ok {
		return 0, errors.New("not a TCP address")
	}
	return addr.Port, nil
}

// EngineEnv selects the store engine of a test pass: "sqlite" or
// "postgres". RunBoth sets it; set it yourself to run one pass.
const EngineEnv = "AGENTGW_TEST_ENGINE"

// RunBoth runs a package's tests twice, for TestMain: on SQLite, then on
// PostgreSQL if there is a server (else the second pass is skipped, with
// the reason, or fails under AGENTGW_REQUIRE_SERVERS=1). With EngineEnv
// set it runs that pass alone. It stops the throwaway cluster and returns
// the exit code.
func RunBoth(m *testing.M) int {
	only := os.Getenv(EngineEnv)
	code := 0
	if only == "" || only == "sqlite" {
		os.Setenv(EngineEnv, "sqlite")
		code = m.Run()
	}
	if only == "" || only == "postgres" {
		if ok, why := Available(); ok {
			fmt.Println("--- the same tests on PostgreSQL")
			os.Setenv(EngineEnv, "postgres")
			if c := m.Run(); c != 0 {
				code = c
			}
		} else if os.Getenv("AGENTGW_REQUIRE_SERVERS") != "" {
			fmt.Println("no PostgreSQL:", why)
			code = 1
		} else {
			fmt.Println("--- the PostgreSQL pass is skipped:", why)
		}
	}
	Stop()
	return code
}

// OnPostgres reports whether this is the PostgreSQL pass of RunBoth.
func OnPostgres() bool { return os.Getenv(EngineEnv) == "postgres" }

// Location returns where t opens a fresh store: sqlitePath, or in the
// PostgreSQL pass the URL of a new database.
func Location(t testing.TB, sqlitePath string) string {
	t.Helper()
	if OnPostgres() {
		return URL(t)
	}
	return sqlitePath
}

// SQLiteOnly skips t in the PostgreSQL pass, saying why.
func SQLiteOnly(t testing.TB, why string) {
	t.Helper()
	if OnPostgres() {
		t.Skip("SQLite only: " + why)
	}
}
