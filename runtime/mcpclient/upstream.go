package mcpclient

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"agentgw/metrics"
	"agentgw/runtime"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// ProtocolVersion is the MCP revision the runtime asks for first, with
// server/discover. An upstream that does not answer it at that revision
// (an older server) is reached through initialize at LegacyProtocolVersion:
// the go-sdk client falls back on its own.
const ProtocolVersion = "2026-07-28"

// LegacyProtocolVersion is the revision of the initialize fallback; the
// server may negotiate an older one.
const LegacyProtocolVersion = "2025-11-25"

// State is the state of the upstream MCP server.
type State int

// Upstream states.
const (
	// StateStopped: not running; a call starts it if ColdStart is set.
	StateStopped State = iota
	// StateStarting: being started (process, transport, initialize).
	StateStarting
	// StateUp: a session is initialized and serving calls.
	StateUp
	// StateBackoff: the last start failed or the session ended; a restart
	// is scheduled.
	StateBackoff
	// StateClosed: the runtime was closed.
	StateClosed
)

// String returns the state's lowercase name.
func (s State) String() string {
	switch s {
	case StateStopped:
		return "stopped"
	case StateStarting:
		return "starting"
	case StateUp:
		return "up"
	case StateBackoff:
		return "backoff"
	case StateClosed:
		return "closed"
	}
	return "unknown"
}

// Status describes the upstream for presence and for the operator.
type Status struct {
	// State is the current state; Up is State == StateUp.
	State State
	Up    bool
	// Since is when the state was entered.
	Since time.Time
	// Starts counts successful starts; Failures the consecutive failed
	// starts and early session ends.
	Starts, Failures int
	// RetryAt is when the next restart is due, in StateBackoff.
	RetryAt time.Time
	// LastError describes the last failure for the operator's log, with
	// credentials redacted. It is never sent to callers.
	LastError string
	// ServerName, ServerVersion and ProtocolVersion come from the last
	// server/discover or initialize result.
	ServerName, ServerVersion, ProtocolVersion string
}

// errDown means the upstream is not up and the call may not start it.
var errDown = errors.New("mcp: upstream is not available")

// errClosed means the runtime was closed.
var errClosed = errors.New("mcp: runtime closed")

// upstream keeps at most one session with the MCP server: it starts it
// lazily or keeps it warm, restarts it with backoff, and stops it when
// idle.
type upstream struct {
	r   *Runtime
	ctx context.Context // ends at Close

	mu        sync.Mutex
	st        Status
	sess      *session
	startDone chan struct{} // closed when the running start attempt ends
	timer     *time.Timer   // restart (backoff) or idle stop
	inflight  int
	// changed is closed, and replaced, at every change of state: calls
	// waiting for a restart wait on it.
	changed chan struct{}

	notifyMu sync.Mutex
	seq      uint64 // of the last status computed
	notified uint64 // of the last status delivered
}

// session is one initialized connection to the MCP server.
type session struct {
	cs              *sdk.ClientSession
	tap             *tapConn
	secrets         *secrets
	protocolVersion string
	serverName      string
	serverTitle     string
	serverVersion   string
	tasksCall       bool // capabilities.tasks.requests.tools.call
	tasksCancel     bool // capabilities.tasks.cancel
	// current: the session is at 2026-07-28 or later (server/discover,
	// per-request _meta, MRTR); tasksExt: its server declares the tasks
	// extension io.modelcontextprotocol/tasks.
	current  bool
	tasksExt bool
	started  time.Time
	done     chan struct{} // closed when the session has ended
	stopping atomic.Bool   // ended on purpose (idle, Close)
	stderr   *runtime.Tail

	mu          sync.Mutex
	taskSupport map[string]string // tool name → execution.taskSupport, once listed
}

// setStateLocked changes the state and returns the status to notify.
func (u *upstream) setStateLocked(s State) (Status, uint64) {
	if u.st.State != s {
		u.st.State = s
		u.st.Since = time.Now()
	}
	if u.changed != nil {
		close(u.changed)
	}
	u.changed = make(chan struct{})
	u.st.Up = s == StateUp
	u.seq++
	return u.st, u.seq
}

// notify delivers st to OnStatus unless a newer status was delivered.
func (u *upstream) notify(st Status, seq uint64) {
	fn := u.r.opts.OnStatus
	if fn == nil {
		return
	}
	u.notifyMu.Lock()
	defer u.notifyMu.Unlock()
	if seq <= u.notified {
		return
	}
	u.notified = seq
	fn(st)
}

func (u *upstream) status() Status {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.st
}

// acquire returns the up session, waiting for a start in progress. A
// stopped or backing-off upstream is started only when wake is set (and,
// in backoff, only once the backoff has elapsed unless force is set).
// release must be called when the caller is done with the session.
//
// Until zero, a start that fails is reported at once. Otherwise the
// caller waits, until then at most, for an upstream that is restarting: a
// start in progress, the restarts of the backoff, and (when wake is set)
// cold starts once their backoff has elapsed. A restart due after until is
// not waited for.
func (u *upstream) acquire(ctx context.Context, wake, force bool, until time.Time) (*session, func(), error) {
	waited := false
	for {
		u.mu.Lock()
		if !until.IsZero() && u.st.State != StateUp && u.st.State != StateClosed && u.st.State != StateStarting &&
			time.Now().Before(until) && (wake || u.st.State == StateBackoff) {
			// Restarting: wait for the next start (a backoff timer, or the
			// cold start made below once RetryAt has passed) if it is due
			// in time.
			retry := u.st.RetryAt
			if retry.After(time.Now()) {
				if retry.After(until) {
					err := &downError{last: u.st.LastError}
					u.mu.Unlock()
					return nil, nil, err
				}
				ch := u.changed
				u.mu.Unlock()
				if err := waitChange(ctx, ch, retry); err != nil {
					return nil, nil, err
				}
				continue
			}
			if u.st.State == StateBackoff {
				// Due now: the backoff timer is about to start it.
				ch := u.changed
				u.mu.Unlock()
				if err := waitChange(ctx, ch, until); err != nil {
					return nil, nil, err
				}
				if time.Now().After(until) {
					u.mu.Lock()
					err := &downError{last: u.st.LastError}
					u.mu.Unlock()
					return nil, nil, err
				}
				continue
			}
			// Stopped and due: start it below, and wait again if it fails.
			waited = false
		}
		switch u.st.State {
		case StateClosed:
			u.mu.Unlock()
			return nil, nil, errClosed
		case StateUp:
			s := u.sess
			u.inflight++
			u.stopTimerLocked()
			u.mu.Unlock()
			return s, func() { u.release(s) }, nil
		case StateStarting:
			ch := u.startDone
			u.mu.Unlock()
			select {
			case <-ch:
				waited = until.IsZero() || !time.Now().Before(until)
			case <-ctx.Done():
				return nil, nil, ctx.Err()
			}
		default: // stopped or backoff
			// After one attempt ended in failure, report it rather than
			// start another at once.
			if waited || !wake || !force && time.Now().Before(u.st.RetryAt) {
				err := &downError{last: u.st.LastError}
				u.mu.Unlock()
				return nil, nil, err
			}
			st, seq := u.beginStartLocked()
			u.mu.Unlock()
			u.notify(st, seq)
		}
	}
}

// waitChange waits for ch (the next change of the upstream's state), for
// at (a change may never come: a stopped upstream is cold-started again
// by the caller) or for ctx to end.
func waitChange(ctx context.Context, ch <-chan struct{}, at time.Time) error {
	t := time.NewTimer(time.Until(at))
	defer t.Stop()
	select {
	case <-ch:
	case <-t.C:
	case <-ctx.Done():
		return ctx.Err()
	}
	return nil
}

// downError means the upstream is not up and the caller may not (or
// could not) start it. last is the redacted reason, for the operator.
type downError struct{ last string }

func (e *downError) Error() string {
	if e.last == "" {
		return errDown.Error()
	}
	return errDown.Error() + ": " + e.last
}

func (e *downError) Unwrap() error { return errDown }

// release ends one use of s; the last use of a lazily started upstream
// arms the idle timer.
func (u *upstream) release(s *session) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.inflight--
	if u.inflight == 0 && u.sess == s && u.st.State == StateUp {
		u.armIdleLocked()
	}
}

func (u *upstream) stopTimerLocked() {
	if u.timer != nil {
		u.timer.Stop()
		u.timer = nil
	}
}

func (u *upstream) armIdleLocked() {
	o := &u.r.opts
	if o.KeepWarm || o.IdleTimeout < 0 {
		return
	}
	u.stopTimerLocked()
	s := u.sess
	u.timer = time.AfterFunc(o.IdleTimeout, func() {
		u.mu.Lock()
		idle := u.sess == s && u.inflight == 0 && u.st.State == StateUp
		u.mu.Unlock()
		if idle {
			s.stopping.Store(true)
			_ = s.cs.Close()
		}
	})
}

// beginStartLocked enters StateStarting and starts a connection attempt.
func (u *upstream) beginStartLocked() (Status, uint64) {
	u.stopTimerLocked()
	u.startDone = make(chan struct{})
	go u.start(u.startDone)
	return u.setStateLocked(StateStarting)
}

// start makes one connection attempt.
func (u *upstream) start(done chan struct{}) {
	ctx, cancel := context.WithTimeout(u.ctx, u.r.opts.ConnectTimeout)
	s, err := u.r.connect(ctx)
	cancel()
	u.mu.Lock()
	defer close(done)
	if u.st.State == StateClosed {
		u.mu.Unlock()
		if s != nil {
			s.stopping.Store(true)
			_ = s.cs.Close()
		}
		return
	}
	var (
		st  Status
		seq uint64
	)
	if err != nil {
		u.st.Failures++
		u.st.LastError = "start: " + err.Error()
		st, seq = u.backoffLocked()
	} else {
		u.sess = s
		u.st.Starts++
		u.st.ServerName, u.st.ServerVersion, u.st.ProtocolVersion = s.serverName, s.serverVersion, s.protocolVersion
		st, seq = u.setStateLocked(StateUp)
		if u.inflight == 0 {
			u.armIdleLocked()
		}
		go u.watch(s)
	}
	u.mu.Unlock()
	u.notify(st, seq)
}

// backoffLocked schedules the next start after a failure: a timer when
// the upstream is kept warm, otherwise only a RetryAt that cold starts
// respect.
func (u *upstream) backoffLocked() (Status, uint64) {
	o := &u.r.opts
	d := o.BackoffMin
	for i := 1; i < u.st.Failures && d < o.BackoffMax; i++ {
		d *= 2
	}
	d = min(d, o.BackoffMax)
	u.st.RetryAt = time.Now().Add(d)
	if !o.KeepWarm {
		return u.setStateLocked(StateStopped)
	}
	u.stopTimerLocked()
	u.timer = time.AfterFunc(d, func() {
		u.mu.Lock()
		if u.st.State != StateBackoff {
			u.mu.Unlock()
			return
		}
		metrics.RuntimeRestarts.Inc("mcp")
		st, seq := u.beginStartLocked()
		u.mu.Unlock()
		u.notify(st, seq)
	})
	return u.setStateLocked(StateBackoff)
}

// watch waits for the session to end and decides what comes next.
func (u *upstream) watch(s *session) {
	<-s.done
	u.mu.Lock()
	if u.sess != s || u.st.State == StateClosed {
		u.mu.Unlock()
		return
	}
	u.sess = nil
	var (
		st  Status
		seq uint64
	)
	switch {
	case s.stopping.Load():
		u.st.RetryAt = time.Time{}
		if u.r.opts.KeepWarm {
			st, seq = u.beginStartLocked()
		} else {
			st, seq = u.setStateLocked(StateStopped)
		}
	default:
		u.st.LastError = "session ended: " + s.endReason()
		if time.Since(s.started) >= stableAfter {
			u.st.Failures = 0
		}
		u.st.Failures++
		if u.r.opts.KeepWarm {
			st, seq = u.backoffLocked()
		} else {
			// A cold-startable upstream that crashed is started again by
			// the next call, without waiting.
			u.st.RetryAt = time.Time{}
			st, seq = u.setStateLocked(StateStopped)
		}
	}
	u.mu.Unlock()
	u.notify(st, seq)
}

// close stops the upstream for good.
func (u *upstream) close() {
	u.mu.Lock()
	if u.st.State == StateClosed {
		u.mu.Unlock()
		return
	}
	u.stopTimerLocked()
	s := u.sess
	u.sess = nil
	st, seq := u.setStateLocked(StateClosed)
	u.mu.Unlock()
	if s != nil {
		s.stopping.Store(true)
		_ = s.cs.Close()
		<-s.done
	}
	u.notify(st, seq)
}

// endReason describes why a session ended, for the operator.
func (s *session) endReason() string {
	err := s.cs.Wait()
	msg := "closed"
	if err != nil {
		msg = err.Error()
	}
	if s.stderr != nil {
		if t := s.stderr.Text(s.secrets.redact); t != "" {
			msg += "; stderr: " + t
		}
	}
	return s.secrets.redact(msg)
}
