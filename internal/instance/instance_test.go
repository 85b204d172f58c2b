package instance_test

import (
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"agentgw/internal/instance"
	"agentgw/internal/procgroup"
)

// TestGone: this process is not gone; a process that ran and was reaped
// is; IDs without an identity, or of another boot, never are.
func TestGone(t *testing.T) {
	if !procgroup.Supported {
		t.Skip("no process identity here")
	}
	self := instance.New()
	if instance.Gone(self) {
		t.Errorf("%s is gone", self)
	}
	if a, b := instance.New(), instance.New(); a == b {
		t.Errorf("two IDs alike: %s", a)
	}
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p, err := procgroup.Self()
	if err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	stat, err := readStart(pid)
	if err != nil {
		t.Fatal(err)
	}
	dead := "gw-0000@" + p.BootID + ":" + strconv.Itoa(pid) + ":" + stat
	if instance.Gone(dead) {
		t.Errorf("%s gone while it runs", dead)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if !instance.Gone(dead) {
		t.Errorf("%s not gone after it ended", dead)
	}
	for _, id := range []string{"gw-0000", "gw-0000@other-boot:1:1", "gw-0000@" + p.BootID + ":x:1", ""} {
		if instance.Gone(id) {
			t.Errorf("%q gone", id)
		}
	}
}

// readStart reads field 22 of /proc/PID/stat.
func readStart(pid int) (string, error) {
	b, err := exec.Command("cat", "/proc/"+strconv.Itoa(pid)+"/stat").Output()
	if err != nil {
		return "", err
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	return f[19], nil
}
