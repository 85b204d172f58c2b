package sandbox_test

import (
	"os"
	osexec "os/exec"
	"testing"
	"time"

	"agentgw/runtime/sandbox"
)

// BenchmarkStart measures starting a child and waiting for it to exit:
// /bin/true directly, through the helper without Landlock (limits and
// no_new_privs only), and confined (the default rules, with a protected
// path carved out of /etc). docs/BENCHMARKS.md records the ratios.
func BenchmarkStart(b *testing.B) {
	work := b.TempDir()
	for _, c := range []struct {
		name  string
		child *sandbox.Child
	}{
		{"direct", nil},
		{"helper", &sandbox.Child{Helper: os.Args[0], Rules: sandbox.Rules{Work: work, Network: true,
			Limits: sandbox.Limits{OpenFiles: 1024, MemoryBytes: 2 << 30}}}},
		{"landlock", &sandbox.Child{Helper: os.Args[0], Rules: sandbox.Rules{Landlock: true, Work: work, Network: true,
			Protected: []string{"/etc/hostname", b.TempDir()}, Limits: sandbox.Limits{OpenFiles: 1024, MemoryBytes: 2 << 30}}}},
	} {
		b.Run(c.name, func(b *testing.B) {
			// The child's own processor time, which the load of a shared
			// machine disturbs less than the wall clock.
			var cpu time.Duration
			for b.Loop() {
				cmd := osexec.Command("/bin/true")
				cmd.Dir = work
				if err := c.child.Apply(cmd); err != nil {
					b.Fatal(err)
				}
				if out, err := cmd.CombinedOutput(); err != nil {
					b.Fatalf("%v: %s", err, out)
				}
				cpu += cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
			}
			b.ReportMetric(float64(cpu.Microseconds())/float64(b.N)/1000, "cpu-ms/op")
		})
	}
}
