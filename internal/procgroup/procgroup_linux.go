//go:build linux

package procgroup

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Supported reports whether process groups can be identified here.
const Supported = true

// BootID returns the machine's boot ID.
func BootID() (string, error) {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return "", fmt.Errorf("procgroup: boot id: %w", err)
	}
	return strings.TrimSpace(string(b)), nil
}

// Identify returns the identity of the process group led by pid, which
// must be running.
func Identify(pid int) (Group, error) {
	boot, err := BootID()
	if err != nil {
		return Group{}, err
	}
	st, err := readStat(pid)
	if err != nil {
		return Group{}, err
	}
	if st.pgrp != pid {
		return Group{}, fmt.Errorf("procgroup: process %d does not lead its process group", pid)
	}
	self, err := readStat(os.Getpid())
	if err != nil {
		return Group{}, err
	}
	return Group{PGID: pid, BootID: boot, StartTicks: st.start, OwnerPID: self.pid, OwnerStart: self.start}, nil
}

// KillStale kills, with SIGKILL, every process still in one of groups
// that belongs to it (see the package documentation), and waits a bounded
// time for them to be gone. It returns how many processes it killed.
func KillStale(groups []Group) (int, error) {
	if len(groups) == 0 {
		return 0, nil
	}
	self, err := readStat(os.Getpid())
	if err != nil {
		return 0, err
	}
	return killStale(groups, self.start)
}

// killStale is KillStale for members that started no later than before
// (clock ticks since boot).
func killStale(groups []Group, before uint64) (int, error) {
	boot, err := BootID()
	if err != nil {
		return 0, err
	}
	want := map[int]Group{}
	for _, g := range groups {
		if g.BootID == boot && !alive(proc{pid: g.OwnerPID, start: g.OwnerStart}) {
			want[g.PGID] = g
		}
	}
	if len(want) == 0 {
		return 0, nil
	}
	procs, err := scan()
	if err != nil {
		return 0, err
	}
	var killed []proc
	for _, p := range procs {
		g, ok := want[p.pgrp]
		if !ok || p.pid == os.Getpid() || p.state == 'Z' || p.start < g.StartTicks || p.start > before {
			continue
		}
		if err := syscall.Kill(p.pid, syscall.SIGKILL); err == nil {
			killed = append(killed, p)
		}
	}
	deadline := time.Now().Add(killWait)
	for _, p := range killed {
		for alive(p) && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
	}
	return len(killed), nil
}

// proc is what KillStale reads of one process.
type proc struct {
	pid, pgrp int
	state     byte
	start     uint64
}

// alive reports whether p still runs (a zombie does not).
func alive(p proc) bool {
	st, err := readStat(p.pid)
	return err == nil && st.start == p.start && st.state != 'Z'
}

// scan reads every process of /proc.
func scan() ([]proc, error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, fmt.Errorf("procgroup: %w", err)
	}
	var out []proc
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if st, err := readStat(pid); err == nil {
			out = append(out, st)
		}
	}
	return out, nil
}

// readStat parses /proc/PID/stat: state (field 3), process group (field
// 5) and start time (field 22). The command name (field 2) is in
// parentheses and may hold spaces or parentheses itself, so fields are
// counted from the last ')'.
func readStat(pid int) (proc, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return proc{}, err
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return proc{}, errors.New("procgroup: malformed stat")
	}
	f := strings.Fields(s[i+1:])
	// f[0] is field 3.
	if len(f) < 20 || len(f[0]) != 1 {
		return proc{}, errors.New("procgroup: malformed stat")
	}
	pgrp, err1 := strconv.Atoi(f[2])
	start, err2 := strconv.ParseUint(f[19], 10, 64)
	if err1 != nil || err2 != nil {
		return proc{}, errors.New("procgroup: malformed stat")
	}
	return proc{pid: pid, pgrp: pgrp, state: f[0][0], start: start}, nil
}

// Self identifies the running process: this boot, its PID and its start
// time.
func Self() (Process, error) {
	boot, err := BootID()
	if err != nil {
		return Process{}, err
	}
	st, err := readStat(os.Getpid())
	if err != nil {
		return Process{}, err
	}
	return Process{BootID: boot, PID: st.pid, Start: st.start}, nil
}

// Gone reports whether p is known to have ended: it ran during this boot
// of this machine and runs no more. A process of another boot, or of
// another machine, is never known to be gone.
func Gone(p Process) bool {
	boot, err := BootID()
	if err != nil || p.BootID != boot {
		return false
	}
	return !alive(proc{pid: p.PID, start: p.Start})
}
