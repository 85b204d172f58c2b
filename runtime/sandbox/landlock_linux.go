//go:build linux

package sandbox

import (
	"errors"
	"fmt"
	"os"
	goruntime "runtime"
	"syscall"
	"time"

	"github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// ABI returns the Landlock ABI version of the running kernel, 0 when it
// has none (or it is disabled at boot).
func ABI() int {
	v, err := ll.LandlockGetABIVersion()
	if err != nil || v < 0 {
		return 0
	}
	return v
}

// confineAndExec applies r to this process and execs args with env.
func confineAndExec(r *Rules, args, env []string) error {
	if err := setLimits(r.Limits); err != nil {
		return err
	}
	// Everything below happens on this thread, which execs: Landlock and
	// no_new_privs are per thread until then, and execve keeps them.
	goruntime.LockOSThread()
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("sandbox-exec: no_new_privs: %w", err)
	}
	if r.Landlock {
		fd, flags, err := ruleset(r, args[0])
		if err != nil {
			return fmt.Errorf("sandbox-exec: landlock: %w", err)
		}
		if fd >= 0 {
			err := ll.LandlockRestrictSelf(fd, flags)
			unix.Close(fd)
			if err != nil {
				return fmt.Errorf("sandbox-exec: landlock: %w", err)
			}
		}
	}
	return execRetrying(args, env)
}

// execRetrying execs args; while the program is being replaced (busy
// while written, or missing between a remove and a rename: an upgrade in
// place) it tries again for up to restartWait.
func execRetrying(args, env []string) error {
	until := time.Now().Add(restartWait)
	for delay := 50 * time.Millisecond; ; delay = min(2*delay, time.Second) {
		err := syscall.Exec(args[0], args, env)
		replacing := errors.Is(err, syscall.ETXTBSY)
		if errors.Is(err, syscall.ENOENT) {
			_, serr := os.Stat(args[0])
			replacing = errors.Is(serr, os.ErrNotExist)
		}
		if !replacing || time.Now().Add(delay).After(until) {
			return fmt.Errorf("sandbox-exec: exec: %w", err)
		}
		time.Sleep(delay)
	}
}

// ruleset builds the Landlock ruleset of r for the program prog, downgraded
// to what the kernel has.
func ruleset(r *Rules, prog string) (int, uint32, error) {
	cfg := landlock.Config{
		HandledAccessFS: landlock.V11.HandledAccessFS,
		Scoped:          landlock.V11.Scoped,
	}
	if !r.Network {
		cfg.HandledAccessNet = landlock.V11.HandledAccessNet
	}
	var read, write []string
	for _, p := range append(append([]string(nil), SystemRead...), r.Read...) {
		read = append(read, grants(p, r.Protected)...)
	}
	if r.Work != "" {
		// Granted even inside a protected directory: the work
		// directories live in the state directory's run/.
		write = append(write, Resolve(r.Work)...)
	}
	for _, p := range r.Write {
		write = append(write, grants(p, r.Protected)...)
	}
	rules := []landlock.Rule{
		landlock.ROFiles(Resolve(prog)...).IgnoreIfMissing(),
		landlock.RWFiles(systemDevices...).IgnoreIfMissing(),
	}
	for _, p := range read {
		rules = append(rules, pathRule(p, false))
	}
	for _, p := range write {
		rules = append(rules, pathRule(p, true))
	}
	return cfg.BestEffort().NewRulesetFD(rules...)
}

// pathRule grants p: a directory with everything beneath it, or a file.
func pathRule(p string, write bool) landlock.Rule {
	st, err := os.Stat(p)
	dir := err == nil && st.IsDir()
	switch {
	case dir && write:
		return landlock.RWDirs(p).WithRefer().IgnoreIfMissing()
	case dir:
		return landlock.RODirs(p).IgnoreIfMissing()
	case write:
		return landlock.RWFiles(p).IgnoreIfMissing()
	default:
		return landlock.ROFiles(p).IgnoreIfMissing()
	}
}

// setLimits sets the non-zero limits, soft and hard.
func setLimits(l Limits) error {
	for _, lim := range []struct {
		res int
		v   uint64
		key string
	}{
		{unix.RLIMIT_CPU, l.CPUSeconds, "cpu seconds"},
		{unix.RLIMIT_DATA, l.MemoryBytes, "memory"},
		{unix.RLIMIT_NOFILE, l.OpenFiles, "open files"},
		{unix.RLIMIT_NPROC, l.Processes, "processes"},
	} {
		if lim.v == 0 {
			continue
		}
		rl := unix.Rlimit{Cur: lim.v, Max: lim.v}
		var cur unix.Rlimit
		if err := unix.Getrlimit(lim.res, &cur); err == nil && cur.Max != unix.RLIM_INFINITY && cur.Max < rl.Max {
			// Never above the hard limit the gateway has.
			rl = unix.Rlimit{Cur: min(rl.Cur, cur.Max), Max: cur.Max}
		}
		if err := unix.Setrlimit(lim.res, &rl); err != nil {
			return fmt.Errorf("sandbox-exec: limit %s: %w", lim.key, err)
		}
	}
	return nil
}
