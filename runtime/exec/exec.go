// Package exec is the exec runtime: each task runs a local command,
// started per task, that speaks JSON lines on its standard input and
// output (protocol agentgw-exec/0, specified in docs/exec-runtime.md).
//
// The gateway writes the invoke message, input answers and cancellation
// requests; the tool writes progress, input requests and one terminal
// report. Standard error is kept, bounded and redacted, for the operator's
// log (runtime.Diagnostics); it never reaches the caller. The command runs
// in its own process group, recorded (Options.Tracker) so that what a dead
// gateway left of it is killed at the next start; how it is stopped
// (Options.Grace, then SIGTERM and Options.KillGrace, then SIGKILL):
// docs/exec-runtime.md, "Process" and "Ending".
package exec

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"agentgw/internal/privfile"
	"agentgw/runtime"
	"agentgw/runtime/sandbox"
)

// Defaults of Options.
const (
	// DefaultGrace is how long a tool may take to stop after it is told
	// to (cancel message, or its input closed) before it gets SIGTERM.
	DefaultGrace = 5 * time.Second
	// DefaultKillGrace is the time between SIGTERM and SIGKILL.
	DefaultKillGrace = 2 * time.Second
	// DefaultMaxLineBytes bounds one output line of the tool.
	DefaultMaxLineBytes = 1 << 20
	// DefaultMaxStderrBytes is how much of the end of standard error is
	// kept.
	DefaultMaxStderrBytes = 8 << 10
	// DefaultMaxDuration bounds a call that has no deadline.
	DefaultMaxDuration = time.Hour
	// basePath is the PATH of every tool unless Options.Env sets one.
	basePath = "/usr/local/bin:/usr/bin:/bin"
	// writeQueue bounds the messages waiting to be written to a tool.
	writeQueue = 16
	// DefaultRestartWait bounds how long Start tries again to start a
	// program that is being replaced (an upgrade in place: "text file
	// busy", or missing for a moment) before it fails; the task's deadline
	// bounds it too.
	DefaultRestartWait = 10 * time.Second
	// restartRetry is the first wait between two such tries; it doubles
	// up to a second.
	restartRetry = 50 * time.Millisecond
)

// Options configures the exec runtime of one endpoint.
type Options struct {
	// Command is the program and its arguments, the command key of the
	// endpoint's configuration. The program must be an absolute path to
	// an executable file; it is not looked up in PATH.
	Command []string
	// Dir is the working directory of the tool. Empty means a fresh 0700
	// directory of its own (the gateway passes one under its state
	// directory), never the shared temporary directory, where another
	// local user could plant symbolic links.
	Dir string
	// Env holds extra KEY=value entries for the tool's environment, which
	// otherwise contains only PATH and LANG. The gateway's own environment
	// is never passed on.
	Env []string
	// Grace, KillGrace, MaxLineBytes, MaxStderrBytes and MaxDuration
	// override the defaults above when positive.
	Grace, KillGrace             time.Duration
	MaxLineBytes, MaxStderrBytes int
	MaxDuration                  time.Duration
	// RestartWait overrides DefaultRestartWait when positive.
	RestartWait time.Duration
	// Tracker, if set, records each tool's process group, so that what a
	// gateway that died left of it is killed when it starts again.
	Tracker runtime.ProcessTracker
	// Sandbox, if set, confines every run of the program (package
	// runtime/sandbox): its work directory is Dir.
	Sandbox *sandbox.Child
}

// Runtime starts the configured command once per task.
type Runtime struct {
	opts Options
	env  []string
}

var _ runtime.Runtime = (*Runtime)(nil)

// New checks opts and returns the runtime. The program must exist and be
// executable now; errors name the problem, never the environment.
func New(opts Options) (*Runtime, error) {
	if len(opts.Command) == 0 || opts.Command[0] == "" {
		return nil, errors.New("exec: command is empty")
	}
	prog := opts.Command[0]
	if !filepath.IsAbs(prog) {
		return nil, fmt.Errorf("exec: command %q is not an absolute path", prog)
	}
	st, err := os.Stat(prog)
	if err != nil {
		return nil, fmt.Errorf("exec: command: %w", err)
	}
	if st.IsDir() || st.Mode().Perm()&0o111 == 0 {
		return nil, fmt.Errorf("exec: command %q is not an executable file", prog)
	}
	env := []string{"PATH=" + basePath, "LANG=C.UTF-8"}
	for _, kv := range opts.Env {
		k, _, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, errors.New("exec: env entries must be KEY=value")
		}
		env = append(env, kv)
	}
	def := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&opts.Grace, DefaultGrace)
	def(&opts.KillGrace, DefaultKillGrace)
	def(&opts.MaxDuration, DefaultMaxDuration)
	def(&opts.RestartWait, DefaultRestartWait)
	if opts.MaxLineBytes <= 0 {
		opts.MaxLineBytes = DefaultMaxLineBytes
	}
	if opts.MaxStderrBytes <= 0 {
		opts.MaxStderrBytes = DefaultMaxStderrBytes
	}
	if opts.Dir == "" {
		d, err := privfile.TempWorkDir()
		if err != nil {
			return nil, fmt.Errorf("working directory: %w", err)
		}
		opts.Dir = d
	}
	opts.Command = append([]string(nil), opts.Command...)
	opts.Sandbox = opts.Sandbox.ForWork(opts.Dir)
	return &Runtime{opts: opts, env: env}, nil
}

// CanResume reports false: a tool process does not survive the gateway.
func (r *Runtime) CanResume() bool { return false }

// Resume returns runtime.ErrNotResumable.
func (r *Runtime) Resume(context.Context, runtime.Call, runtime.Reporter) (runtime.Execution, error) {
	return nil, runtime.ErrNotResumable
}

// Start starts the command for call and writes the invoke message.
func (r *Runtime) Start(ctx context.Context, call runtime.Call, rep runtime.Reporter) (runtime.Execution, error) {
	line, err := invokeLine(call)
	if err != nil {
		return nil, fmt.Errorf("exec: encode invoke: %w", err)
	}
	e := &execution{
		opts:       r.opts,
		deadline:   call.Deadline,
		writes:     make(chan []byte, writeQueue),
		cancel:     make(chan struct{}),
		lines:      make(chan lineEvent),
		exited:     make(chan struct{}),
		stderrDone: make(chan struct{}),
		done:       make(chan struct{}),
		stderr:     &runtime.Tail{Max: r.opts.MaxStderrBytes},
		exitCode:   -1,
		secrets:    secretStrings(call.Arguments, envValues(r.opts.Env)),
	}
	if e.deadline.IsZero() {
		e.deadline = time.Now().Add(r.opts.MaxDuration)
	}
	until := time.Now().Add(r.opts.RestartWait)
	if e.deadline.Before(until) {
		until = e.deadline
	}
	var retriedPresent bool // see replacing
	for delay := restartRetry; ; delay = min(2*delay, time.Second) {
		err := r.spawn(e, line)
		if err == nil || !r.replacing(err, &retriedPresent) || !time.Now().Add(delay).Before(until) {
			if err != nil {
				return nil, err
			}
			break
		}
		select {
		case <-time.After(delay):
		case <-ctx.Done():
			return nil, err
		}
	}
	go e.supervise(ctx, rep)
	return e, nil
}

// replacing reports whether a start failed because the program is being
// replaced: busy while written, or itself missing (between a remove and a
// rename). A start that found the program missing may see it back by the
// time it looks again, so the first "not found" with the program there is
// tried again too (retriedPresent records it); a second one means that
// the program is there but its interpreter is missing, which is not a
// replacement.
func (r *Runtime) replacing(err error, retriedPresent *bool) bool {
	if errors.Is(err, syscall.ETXTBSY) {
		return true
	}
	if !errors.Is(err, os.ErrNotExist) {
		return false
	}
	if _, serr := os.Stat(r.opts.Command[0]); errors.Is(serr, os.ErrNotExist) {
		return true
	}
	if *retriedPresent {
		return false
	}
	*retriedPresent = true
	return true
}

// spawn starts the command for e, hands it the invoke line and starts the
// goroutines that serve its pipes.
func (r *Runtime) spawn(e *execution, line []byte) (err error) {
	var files []*os.File
	closeAll := func() {
		for _, f := range files {
			f.Close()
		}
	}
	pipe := func() (*os.File, *os.File) {
		rd, wr, perr := os.Pipe()
		if perr != nil && err == nil {
			err = perr
		}
		files = append(files, rd, wr)
		return rd, wr
	}
	stdinR, stdinW := pipe()
	stdoutR, stdoutW := pipe()
	stderrR, stderrW := pipe()
	if err != nil {
		closeAll()
		return fmt.Errorf("exec: pipes: %w", err)
	}
	cmd := osexec.Command(r.opts.Command[0], r.opts.Command[1:]...)
	cmd.Dir = r.opts.Dir
	cmd.Env = r.env
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdinR, stdoutW, stderrW
	setGroup(cmd)
	if err := r.opts.Sandbox.Apply(cmd); err != nil {
		closeAll()
		return fmt.Errorf("exec: %w", err)
	}
	if err := cmd.Start(); err != nil {
		closeAll()
		return fmt.Errorf("exec: start %s: %w", filepath.Base(r.opts.Command[0]), err)
	}
	// The child has its ends now; holding ours open would keep the reads
	// below from ever seeing end of file.
	stdinR.Close()
	stdoutW.Close()
	stderrW.Close()
	e.pid = cmd.Process.Pid
	if r.opts.Tracker != nil {
		// Recorded before the tool is given its call.
		r.opts.Tracker.Started(e.pid)
	}
	e.send(line)
	go e.writer(stdinW)
	go e.readStdout(stdoutR)
	go e.readStderr(stderrR)
	go e.wait(cmd)
	return nil
}

// lineEvent is one line of the tool's output, parsed.
type lineEvent struct {
	msg toolMessage
	err error
}

// execution is one running tool process.
type execution struct {
	opts     Options
	deadline time.Time
	pid      int

	mu          sync.Mutex
	writes      chan []byte
	stdinClosed bool
	waiting     bool // the tool awaits an input answer
	secrets     []string
	note        string
	exitCode    int

	cancel     chan struct{}
	cancelOnce sync.Once
	lines      chan lineEvent // closed at the end of standard output
	exited     chan struct{}  // closed when the process has exited
	stderrDone chan struct{}
	stderr     *runtime.Tail
	done       chan struct{}
}

// Input queues an answer for a tool that waits for one.
func (e *execution) Input(answer json.RawMessage) error {
	line, err := inputLine(answer)
	if err != nil {
		return fmt.Errorf("exec: encode input: %w", err)
	}
	e.mu.Lock()
	if !e.waiting || e.stdinClosed {
		e.mu.Unlock()
		return runtime.ErrNotWaiting
	}
	e.waiting = false
	e.secrets = secretStrings(answer, e.secrets)
	e.mu.Unlock()
	if !e.send(line) {
		return runtime.ErrNotWaiting
	}
	return nil
}

// Cancel asks the tool to stop; it never blocks.
func (e *execution) Cancel() { e.cancelOnce.Do(func() { close(e.cancel) }) }

// Done is closed when the process has exited, its output is drained and
// the last report has been made.
func (e *execution) Done() <-chan struct{} { return e.done }

// Diagnostics returns the exit status, a note and the redacted tail of
// standard error.
func (e *execution) Diagnostics() runtime.Diagnostics {
	e.mu.Lock()
	code, note, secrets := e.exitCode, e.note, e.secrets
	e.mu.Unlock()
	return runtime.Diagnostics{ExitCode: code, Note: note, Stderr: e.stderr.Text(redactor(secrets))}
}

// redactFailure removes the execution's secrets (argument and input
// strings, configured env values) from a failure the tool reported: its
// message reaches the caller.
func (e *execution) redactFailure(f runtime.Failure) runtime.Failure {
	e.mu.Lock()
	secrets := e.secrets
	e.mu.Unlock()
	f.Message = redactor(secrets)(f.Message)
	return f
}

// setNote records why the execution ended abnormally; the first reason
// wins, except that a kill replaces a termination.
func (e *execution) setNote(s string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.note == "" || e.note == noteTerminated && s == noteKilled {
		e.note = s
	}
}

// Notes of a stop that needed signals.
const (
	noteTerminated = "terminated after the grace period"
	noteKilled     = "killed after the grace period"
)

func (e *execution) setWaiting(w bool) {
	e.mu.Lock()
	e.waiting = w
	e.mu.Unlock()
}

// send queues one line for the tool's input without blocking; it reports
// false when the input is closed or the queue is full.
func (e *execution) send(line []byte) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.stdinClosed {
		return false
	}
	select {
	case e.writes <- line:
		return true
	default:
		return false
	}
}

// closeStdin closes the tool's input once the queued lines are written.
func (e *execution) closeStdin() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.stdinClosed {
		e.stdinClosed = true
		e.waiting = false
		close(e.writes)
	}
}

// writer copies queued lines to the tool. A tool that stops reading
// blocks only this goroutine; killing it ends the write.
func (e *execution) writer(w *os.File) {
	defer w.Close()
	for line := range e.writes {
		if _, err := w.Write(line); err != nil {
			for range e.writes {
			}
			return
		}
	}
}

// readStdout parses the tool's output lines in order.
func (e *execution) readStdout(r *os.File) {
	defer close(e.lines)
	defer r.Close()
	br := bufio.NewReaderSize(r, e.opts.MaxLineBytes)
	for {
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			e.lines <- lineEvent{err: fmt.Errorf("an output line exceeds %d bytes", e.opts.MaxLineBytes)}
			_, _ = io.Copy(io.Discard, br)
			return
		}
		if len(bytes.TrimSpace(line)) > 0 {
			msg, perr := parseLine(line)
			e.lines <- lineEvent{msg: msg, err: perr}
		}
		if err != nil {
			return
		}
	}
}

func (e *execution) readStderr(r *os.File) {
	defer close(e.stderrDone)
	defer r.Close()
	_, _ = io.Copy(e.stderr, r)
}

// wait reaps the process, then kills what is left of its group so that
// no descendant keeps the output pipes open.
func (e *execution) wait(cmd *osexec.Cmd) {
	_ = cmd.Wait()
	signalGroup(e.pid, true)
	if e.opts.Tracker != nil {
		e.opts.Tracker.Ended(e.pid)
	}
	e.mu.Lock()
	if cmd.ProcessState != nil {
		e.exitCode = cmd.ProcessState.ExitCode()
	}
	e.mu.Unlock()
	close(e.exited)
}

// supervise turns the tool's output, the process's end, cancellation,
// the deadline and the context into reports, in one goroutine so that
// reports are ordered.
func (e *execution) supervise(ctx context.Context, rep runtime.Reporter) {
	defer close(e.done)
	var (
		settled   bool // nothing more may be reported
		cancelled bool // a cancellation reached the tool
		stopping  bool // the tool was told to stop; the grace timer runs
		lines     = e.lines
		exited    = e.exited
		cancelC   = e.cancel
		ctxDone   = ctx.Done()
		graceC    <-chan time.Time
		killC     <-chan time.Time
	)
	deadline := time.NewTimer(time.Until(e.deadline))
	defer deadline.Stop()
	// finish closes the tool's input and starts the grace period.
	finish := func() {
		if !stopping {
			stopping = true
			e.closeStdin()
			graceC = time.After(e.opts.Grace)
		}
	}
	// stop tells the tool to stop, then finishes.
	stop := func() {
		if !stopping && !cancelled {
			e.send(cancelLine)
		}
		finish()
	}
	// report makes one report; a refusal other than ErrRejected ends
	// reporting.
	report := func(err error) error {
		if err != nil && !errors.Is(err, runtime.ErrRejected) {
			settled = true
			stop()
		}
		return err
	}
	fail := func(msg, note string) {
		e.setNote(note)
		_ = report(rep.Fail(runtime.Failure{Code: runtime.CodeInternalError, Message: msg}))
		settled = true
		stop()
	}
	for lines != nil || exited != nil {
		select {
		case ev, ok := <-lines:
			if !ok {
				lines = nil
				continue
			}
			if settled {
				continue
			}
			if ev.err != nil {
				fail("The tool broke the exec protocol.", "protocol violation: "+ev.err.Error())
				continue
			}
			switch m := ev.msg; m.typ {
			case msgProgress:
				_ = report(rep.Progress(m.progress))
			case msgInputRequired:
				// Waiting is set before the request is committed: the
				// answer can arrive as soon as it is.
				e.setWaiting(true)
				if err := report(rep.RequestInput(m.input)); err != nil {
					e.setWaiting(false)
					if errors.Is(err, runtime.ErrRejected) {
						fail("The tool's input request was refused.", "input request refused: "+err.Error())
					}
				}
			case msgResult, msgError, msgCancelled:
				switch m.typ {
				case msgResult:
					_ = report(rep.Complete(m.result))
				case msgError:
					_ = report(rep.Fail(e.redactFailure(m.failure)))
				default:
					_ = report(rep.Cancelled(m.cancelled))
				}
				settled = true
				finish()
			}
		case <-exited:
			exited = nil
		case <-cancelC:
			cancelC = nil
			if !settled && !stopping {
				cancelled = true
				e.send(cancelLine)
				graceC = time.After(e.opts.Grace)
			}
		case <-ctxDone:
			ctxDone = nil
			settled = true
			stop()
		case <-deadline.C:
			if !settled {
				e.setNote("deadline reached")
				_ = report(rep.Fail(runtime.Failure{Code: runtime.CodeDeadlineExpired,
					Message: "The task deadline passed before the tool finished.", Retryable: true}))
				settled = true
			}
			stop()
		case <-graceC:
			graceC = nil
			e.setNote(noteTerminated)
			signalGroup(e.pid, false)
			killC = time.After(e.opts.KillGrace)
		case <-killC:
			killC = nil
			e.setNote(noteKilled)
			signalGroup(e.pid, true)
		}
	}
	if !settled {
		if cancelled {
			_ = rep.Cancelled("")
		} else {
			e.setNote("exited without a terminal message")
			_ = rep.Fail(runtime.Failure{Code: runtime.CodeInternalError,
				Message: "The tool exited without reporting a result."})
		}
	}
	e.closeStdin()
	<-e.stderrDone
}
