package harness

import (
	"errors"
	"fmt"
	"syscall"
	"time"
)

// SignalProsody sends sig to Prosody's process group: SIGSTOP freezes the
// server (its sockets stay open and stop being read), SIGCONT resumes it.
// A test that stops Prosody must resume it before the environment stops.
func (e *Env) SignalProsody(sig syscall.Signal) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.prosody == nil || e.prosody.exited() {
		return errors.New("signal prosody: not running")
	}
	if err := syscall.Kill(-e.prosody.pid(), sig); err != nil {
		return fmt.Errorf("signal prosody: %w", err)
	}
	return nil
}

// KillProsody kills Prosody's process group with SIGKILL, as a crash
// would, and waits for it to exit; StartProsody starts it again with the
// same configuration, data and ports.
func (e *Env) KillProsody() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.prosody == nil {
		return errors.New("kill prosody: not running")
	}
	p := e.prosody
	_ = syscall.Kill(-p.pid(), syscall.SIGKILL)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		return fmt.Errorf("kill prosody: pid %d did not exit", p.pid())
	}
	// Reap what is left of the group, as stop does.
	err := p.stop(0)
	e.prosody = nil
	return err
}
