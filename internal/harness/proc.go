package harness

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// process is one server process started by the harness in its own process
// group, with stdout and stderr captured in a file.
type process struct {
	name    string
	cmd     *exec.Cmd
	outPath string   // captured stdout+stderr
	logs    []string // further log files worth showing on failure
	done    chan struct{}
	waitErr error // valid after done is closed
}

// spawnReq asks the spawner thread to start a command.
type spawnReq struct {
	cmd  *exec.Cmd
	errc chan error
}

var (
	spawnOnce sync.Once
	spawnCh   chan spawnReq
)

// spawn starts cmd from a goroutine locked to an OS thread that never exits.
// The parent-death signal (see setSysProcAttr) is tied to the thread that
// forked the child, not to the process, so forking from an arbitrary goroutine
// could kill the child when the Go runtime retires that thread. A dedicated,
// permanently locked thread fires it only when the whole test binary dies
// (for example when `go test -timeout` kills it and t.Cleanup never runs).
func spawn(cmd *exec.Cmd) error {
	spawnOnce.Do(func() {
		spawnCh = make(chan spawnReq)
		go func() {
			runtime.LockOSThread() // never unlocked: the thread lives as long as the process
			for r := range spawnCh {
				r.errc <- r.cmd.Start()
			}
		}()
	})
	errc := make(chan error, 1)
	spawnCh <- spawnReq{cmd: cmd, errc: errc}
	return <-errc
}

// startProcess runs argv in dir with env, capturing its output in outPath.
func startProcess(name, dir, outPath string, env []string, argv ...string) (*process, error) {
	out, err := os.OpenFile(outPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open %s output: %w", name, err)
	}
	defer out.Close() // the child has its own copy after Start
	fmt.Fprintf(out, "=== harness: %s starting %s: %s\n", time.Now().Format(time.RFC3339Nano), name, strings.Join(argv, " "))
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = env
	cmd.Stdin = nil
	cmd.Stdout = out
	cmd.Stderr = out
	cmd.SysProcAttr = &syscall.SysProcAttr{}
	setSysProcAttr(cmd.SysProcAttr)
	if err := spawn(cmd); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &process{name: name, cmd: cmd, outPath: outPath, done: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// pid returns the process id, which is also its process group id.
func (p *process) pid() int { return p.cmd.Process.Pid }

// exited reports whether the process has exited.
func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop sends SIGTERM to the whole process group, waits up to grace, then
// sends SIGKILL, and finally makes sure no member of the group is left.
func (p *process) stop(grace time.Duration) error {
	pgid := p.pid()
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	var errs []error
	select {
	case <-p.done:
	case <-time.After(grace):
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		select {
		case <-p.done:
		case <-time.After(5 * time.Second):
			errs = append(errs, fmt.Errorf("%s (pid %d) did not exit after SIGKILL", p.name, pgid))
		}
	}
	// Children (ejabberd's erl_child_setup, inet_gethost, ...) may outlive
	// the leader for a moment; kill what is left of the group.
	deadline := time.Now().Add(5 * time.Second)
	for {
		left := groupMembers(pgid)
		if len(left) == 0 {
			break
		}
		if time.Now().After(deadline) {
			errs = append(errs, fmt.Errorf("%s: processes %v of group %d still alive", p.name, left, pgid))
			break
		}
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		time.Sleep(20 * time.Millisecond)
	}
	return errors.Join(errs...)
}

// tail returns the last lines of the process output and log files, for
// error messages.
func (p *process) tail(lines int) string {
	var b strings.Builder
	for _, f := range append([]string{p.outPath}, p.logs...) {
		t := tailFile(f, lines)
		if t == "" {
			continue
		}
		fmt.Fprintf(&b, "--- %s (last %d lines) ---\n%s", f, lines, t)
	}
	return b.String()
}

// tailFile returns the last n lines of a file, or "" if it cannot be read.
func tailFile(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	const maxRead = 64 << 10
	if st, err := f.Stat(); err == nil && st.Size() > maxRead {
		if _, err := f.Seek(st.Size()-maxRead, io.SeekStart); err != nil {
			return ""
		}
	}
	var ring []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		ring = append(ring, sc.Text())
		if len(ring) > n {
			ring = ring[1:]
		}
	}
	if len(ring) == 0 {
		return ""
	}
	return strings.Join(ring, "\n") + "\n"
}

// groupMembers lists the live (non-zombie) processes whose process group is
// pgid, by scanning /proc. It returns nil where /proc is unavailable.
func groupMembers(pgid int) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		state, pg, ok := procStat(pid)
		if ok && pg == pgid && state != "Z" && state != "X" {
			pids = append(pids, pid)
		}
	}
	return pids
}

// procStat returns the state and process group of pid from /proc/pid/stat.
func procStat(pid int) (state string, pgrp int, ok bool) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return "", 0, false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')') // the command name may contain spaces
	if i < 0 {
		return "", 0, false
	}
	f := strings.Fields(s[i+1:])
	// f[0]=state f[1]=ppid f[2]=pgrp
	if len(f) < 3 {
		return "", 0, false
	}
	pg, err := strconv.Atoi(f[2])
	if err != nil {
		return "", 0, false
	}
	return f[0], pg, true
}

// processAlive reports whether pid exists and is not a zombie.
func processAlive(pid int) bool {
	if state, _, ok := procStat(pid); ok {
		return state != "Z" && state != "X"
	}
	if _, err := os.Stat("/proc/self"); err == nil {
		return false // /proc works and pid is not in it
	}
	return syscall.Kill(pid, 0) == nil
}

// cleanEnv returns the current environment without variables that would
// make a server read the wrong configuration or talk to systemd.
func cleanEnv(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "ERL_") || strings.HasPrefix(k, "EJABBERD_") ||
			strings.HasPrefix(k, "PROSODY_") || k == "NOTIFY_SOCKET" || k == "HOME" ||
			k == "CONTRIB_MODULES_PATH" || k == "CONTRIB_MODULES_CONF_DIR" {
			continue
		}
		env = append(env, kv)
	}
	return append(env, extra...)
}
