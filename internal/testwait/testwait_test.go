package testwait_test

import (
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"agentgw/internal/testwait"
)

func TestUntil(t *testing.T) {
	var n atomic.Int32
	go func() {
		time.Sleep(30 * time.Millisecond)
		n.Store(1)
	}()
	testwait.Until(t, 10*time.Second, "the store", func() bool { return n.Load() == 1 })
}

// recorder is a testing.TB whose Fatalf records the failure and ends the
// goroutine, as testing's does.
type recorder struct {
	testing.TB
	msg string
}

func (r *recorder) Helper() {}

func (r *recorder) Fatalf(format string, args ...any) {
	r.msg = format
	runtime.Goexit()
}

func TestUntilFails(t *testing.T) {
	r := &recorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		testwait.Until(r, 50*time.Millisecond, "nothing", func() bool { return false })
	}()
	<-done
	if !strings.Contains(r.msg, "timed out") {
		t.Errorf("Until on a condition that never held: %q", r.msg)
	}
}
