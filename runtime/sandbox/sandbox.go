// Package sandbox confines the runtime children of the gateway (exec
// tools, chat = "exec" programs, stdio MCP servers) with Landlock, so that
// a tool reaches nothing of the gateway's: its configuration, secrets,
// tokens, database, state directory or the other tools' directories.
//
// A Go program cannot run code between fork and exec, so a child is
// started through the gateway's own binary: Wrap rewrites a command to
// run `agentgw sandbox-exec` (Subcommand), which receives its Rules in
// its environment (paths and limits only, never a secret), sets the
// resource limits and no_new_privs, restricts itself with Landlock, and
// execs the tool; the restriction is inherited by everything it starts.
// What a tool may read, write and reach: docs/deploy.md, "What a tool can
// reach".
package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"time"
)

// Subcommand is the hidden subcommand of the agentgw binary that applies
// the rules to itself and execs the tool (Exec).
const Subcommand = "sandbox-exec"

// rulesEnv is the environment variable that carries the JSON rules to the
// helper; the helper removes it before the tool starts.
const rulesEnv = "AGENTGW_SANDBOX_RULES"

// tmpName is the private temporary directory inside the work directory,
// the child's TMPDIR.
const tmpName = "tmp"

// MinRequiredABI is the lowest Landlock ABI that mode "required" accepts:
// ABI 6 brings the signal and abstract socket scopes, without which a
// tool could still signal the gateway.
const MinRequiredABI = 6

// restartWait bounds how long the helper tries again to exec a program
// that is being replaced (exec.DefaultRestartWait, on this side).
const restartWait = 10 * time.Second

// SystemRead are the directories every child may read and execute from,
// those that do not exist are skipped. /proc is needed by most runtimes
// (node, python); Landlock keeps another domain's /proc/PID entries
// (environ, fd, mem) behind its ptrace check, and files opened through
// /proc magic links are checked at their real path.
var SystemRead = []string{
	"/usr", "/lib", "/lib32", "/lib64", "/libx32", "/bin", "/sbin", "/etc", "/opt",
	"/proc", "/sys", "/run/systemd/resolve",
}

// systemDevices are the device files every child may read and write.
var systemDevices = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom"}

// Limits are resource limits (setrlimit) of a child; zero leaves one as
// the gateway has it.
type Limits struct {
	// CPUSeconds is RLIMIT_CPU: processor time, in seconds.
	CPUSeconds uint64 `json:"cpu,omitempty"`
	// MemoryBytes is RLIMIT_DATA: the data segment (heap and private
	// writable mappings), in bytes. Address space reservations (node's)
	// do not count.
	MemoryBytes uint64 `json:"mem,omitempty"`
	// OpenFiles is RLIMIT_NOFILE: open file descriptors.
	OpenFiles uint64 `json:"files,omitempty"`
	// Processes is RLIMIT_NPROC: processes and threads of the gateway's
	// user (all of them: the gateway's own threads count too). Linux
	// does not apply it to root.
	Processes uint64 `json:"procs,omitempty"`
}

// Rules are what one child may do.
type Rules struct {
	// Landlock applies Landlock; false sets only no_new_privs and the
	// limits (mode best-effort without Landlock in the kernel).
	Landlock bool `json:"landlock"`
	// Work is the child's working directory, which it may write, with
	// TMPDIR inside it.
	Work string `json:"work"`
	// Read and Write are the endpoint's sandbox_read and sandbox_write.
	Read  []string `json:"read,omitempty"`
	Write []string `json:"write,omitempty"`
	// Network allows TCP bind and connect; false forbids both where the
	// kernel's ABI can (4 and up).
	Network bool `json:"network"`
	// Protected are paths the child never reaches even inside a granted
	// directory: the configuration, the secrets, the database, the state
	// directory.
	Protected []string `json:"protected,omitempty"`
	// Limits are the child's resource limits.
	Limits Limits `json:"limits"`
}

// Wrap rewrites cmd, built for the tool, to start through helper (the
// agentgw binary) with its Subcommand and the rules r. cmd.Path must be
// an absolute path; cmd.Dir should be r.Work.
func (r *Rules) Wrap(cmd *osexec.Cmd, helper string) error {
	if !filepath.IsAbs(cmd.Path) {
		return fmt.Errorf("sandbox: program %q is not an absolute path", cmd.Path)
	}
	raw, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("sandbox: encode rules: %w", err)
	}
	args := append([]string{helper, Subcommand, cmd.Path}, cmd.Args[1:]...)
	cmd.Path, cmd.Args = helper, args
	cmd.Env = append(append([]string(nil), cmd.Env...), rulesEnv+"="+string(raw))
	return nil
}

// Exec is the helper: args are the tool's program (an absolute path) and
// its arguments. It reads the rules from its environment, applies them to
// itself and execs the tool; it returns only on failure, with an error
// for the tool's standard error (which the operator's log keeps).
func Exec(args []string) error {
	if len(args) == 0 || !filepath.IsAbs(args[0]) {
		return errors.New("sandbox-exec: the program must be an absolute path")
	}
	raw, ok := os.LookupEnv(rulesEnv)
	if !ok {
		return errors.New("sandbox-exec: no rules")
	}
	var r Rules
	if err := json.Unmarshal([]byte(raw), &r); err != nil {
		return fmt.Errorf("sandbox-exec: rules: %w", err)
	}
	// A program being replaced (an upgrade in place, between a remove
	// and a rename) is waited for before the rules are built: Landlock
	// grants it by the file it finds then.
	for until := time.Now().Add(restartWait); ; time.Sleep(50 * time.Millisecond) {
		if _, err := os.Stat(args[0]); !errors.Is(err, os.ErrNotExist) || time.Now().After(until) {
			break
		}
	}
	env := childEnv(os.Environ(), r.Work)
	if r.Work != "" {
		if err := os.Mkdir(filepath.Join(r.Work, tmpName), 0o700); err != nil && !errors.Is(err, os.ErrExist) {
			return fmt.Errorf("sandbox-exec: temporary directory: %w", err)
		}
	}
	return confineAndExec(&r, args, env)
}

// childEnv is env without the rules, with TMPDIR in the work directory
// and HOME there unless the endpoint set one.
func childEnv(env []string, work string) []string {
	out := make([]string, 0, len(env)+2)
	home := false
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case rulesEnv, "TMPDIR":
			continue
		case "HOME":
			home = true
		}
		out = append(out, kv)
	}
	if work != "" {
		out = append(out, "TMPDIR="+filepath.Join(work, tmpName))
		if !home {
			out = append(out, "HOME="+work)
		}
	}
	return out
}

// grants returns the paths that make up path minus the protected ones:
// path itself when no protected path is inside it, none when it is
// inside one, and otherwise its entries, each granted the same way.
// Paths are compared once symbolic links are resolved; a path that does
// not exist gives nothing.
func grants(path string, protected []string) []string {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return nil
	}
	inside := false
	for _, p := range protected {
		if within(real, p) {
			return nil
		}
		if within(p, real) {
			inside = true
		}
	}
	if !inside {
		return []string{real}
	}
	entries, err := os.ReadDir(real)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range entries {
		out = append(out, grants(filepath.Join(real, e.Name()), protected)...)
	}
	return out
}

// within reports whether path is dir or inside it.
func within(path, dir string) bool {
	if path == dir {
		return true
	}
	if dir == "/" {
		return true
	}
	return strings.HasPrefix(path, dir+"/")
}

// Resolve returns paths made absolute, cleaned and with symbolic links
// resolved where they exist: what Protected should hold.
func Resolve(paths ...string) []string {
	out := make([]string, 0, len(paths))
	for _, p := range paths {
		if p == "" {
			continue
		}
		if a, err := filepath.Abs(p); err == nil {
			p = a
		}
		if r, err := filepath.EvalSymlinks(p); err == nil {
			p = r
		}
		out = append(out, p)
	}
	return out
}

// ExitHelperFailed is the exit status of a helper that could not apply its
// rules or start the tool.
const ExitHelperFailed = 126

// RunIfHelper runs the helper and never returns when this process was
// started as one (os.Args[1] is Subcommand): the agentgw binary's main
// and the TestMain of packages whose tests start sandboxed children call
// it first.
func RunIfHelper() {
	if len(os.Args) < 2 || os.Args[1] != Subcommand {
		return
	}
	err := Exec(os.Args[2:])
	fmt.Fprintln(os.Stderr, err)
	os.Exit(ExitHelperFailed)
}

// Child is how a runtime starts its children confined: the helper (the
// agentgw binary) and the rules. A nil *Child starts them directly.
type Child struct {
	Helper string
	Rules  Rules
}

// ForWork returns a copy of c whose work directory is dir; nil stays nil.
func (c *Child) ForWork(dir string) *Child {
	if c == nil {
		return nil
	}
	d := *c
	d.Rules.Work = dir
	return &d
}

// Apply makes cmd start through the helper with c's rules; a nil c leaves
// cmd as it is. A relative program is taken in cmd.Dir.
func (c *Child) Apply(cmd *osexec.Cmd) error {
	if c == nil {
		return nil
	}
	if !filepath.IsAbs(cmd.Path) && cmd.Dir != "" {
		cmd.Path = filepath.Join(cmd.Dir, cmd.Path)
	}
	return c.Rules.Wrap(cmd, c.Helper)
}
