package exec

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"time"

	"agentgw/runtime"
)

// ChatProtocol is the protocol of a chat = "exec" program: one JSON line
// in, reply lines out (docs/messaging.md).
const ChatProtocol = "agentgw-chat/0"

// ChatMessage is the one line a chat program reads. Conversation is an
// opaque handle of the conversation, never a JID.
type ChatMessage struct {
	Type         string `json:"type"`
	Protocol     string `json:"protocol"`
	Conversation string `json:"conversation"`
	Text         string `json:"text"`
	Lang         string `json:"lang,omitempty"`
}

// chatReply is one line a chat program writes.
type chatReply struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// ErrChatProtocol is a chat program's output line that is not a reply.
var ErrChatProtocol = errors.New("exec: the chat program broke agentgw-chat/0")

// Chat runs the command once for one chat message: it writes m as one
// JSON line and closes the program's input, and every line the program
// writes, {"type":"reply","text":"…"}, is one reply, up to maxReplies,
// until it exits or d passes. The program runs as a tool does (Start): in
// its own process group with a parent-death signal, the minimal
// environment plus Options.Env, recorded through Options.Tracker; when it
// exits, or after d (then SIGTERM, and SIGKILL after Options.KillGrace),
// what is left of its group is killed. The bound d and ctx hold until
// the process has exited: a program that closes its output or writes a
// line that is not a reply is stopped too. The configured env values are
// redacted from the replies and from the standard error kept in the
// diagnostics.
func (r *Runtime) Chat(ctx context.Context, m ChatMessage, maxReplies int, d time.Duration) ([]string, runtime.Diagnostics, error) {
	m.Type, m.Protocol = "message", ChatProtocol
	line, err := encodeLine(m)
	if err != nil {
		return nil, runtime.Diagnostics{}, fmt.Errorf("exec: encode chat message: %w", err)
	}
	stdinR, stdinW, err := os.Pipe()
	if err != nil {
		return nil, runtime.Diagnostics{}, fmt.Errorf("exec: pipes: %w", err)
	}
	stdoutR, stdoutW, err := os.Pipe()
	if err != nil {
		stdinR.Close()
		stdinW.Close()
		return nil, runtime.Diagnostics{}, fmt.Errorf("exec: pipes: %w", err)
	}
	stderr := &runtime.Tail{Max: r.opts.MaxStderrBytes}
	cmd := osexec.Command(r.opts.Command[0], r.opts.Command[1:]...)
	cmd.Dir = r.opts.Dir
	cmd.Env = r.env
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdinR, stdoutW, stderr
	// A descendant that keeps standard error open must not hold Wait;
	// the group is killed once it returns.
	cmd.WaitDelay = time.Second
	setGroup(cmd)
	err = r.opts.Sandbox.Apply(cmd)
	if err == nil {
		err = cmd.Start()
	}
	if err != nil {
		stdinR.Close()
		stdinW.Close()
		stdoutR.Close()
		stdoutW.Close()
		return nil, runtime.Diagnostics{}, fmt.Errorf("exec: start %s: %w", filepath.Base(r.opts.Command[0]), err)
	}
	stdinR.Close()
	stdoutW.Close()
	pid := cmd.Process.Pid
	if r.opts.Tracker != nil {
		r.opts.Tracker.Started(pid)
	}
	go func() {
		// A program that never reads its input must not block us.
		_, _ = stdinW.Write(line)
		stdinW.Close()
	}()

	redact := redactor(envValues(r.opts.Env))
	type result struct {
		replies []string
		err     error
	}
	read := make(chan result, 1)
	go func() {
		defer stdoutR.Close()
		var res result
		sc := bufio.NewScanner(stdoutR)
		sc.Buffer(make([]byte, 0, 4096), r.opts.MaxLineBytes)
		for sc.Scan() {
			text := strings.TrimSpace(sc.Text())
			if text == "" {
				continue
			}
			var rep chatReply
			if err := json.Unmarshal([]byte(text), &rep); err != nil || rep.Type != "reply" {
				res.err = ErrChatProtocol
				break
			}
			if len(res.replies) < maxReplies {
				res.replies = append(res.replies, redact(rep.Text))
			}
		}
		if res.err == nil && sc.Err() != nil {
			res.err = fmt.Errorf("%w: %v", ErrChatProtocol, sc.Err())
		}
		read <- res
	}()
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		signalGroup(pid, true)
		if r.opts.Tracker != nil {
			r.opts.Tracker.Ended(pid)
		}
		close(exited)
	}()

	// The bound and the context hold until the process has exited, not
	// only until its output ends: a program that closes its output, or
	// breaks the protocol, and lingers is stopped like a slow one.
	note := ""
	timer := time.NewTimer(d)
	defer timer.Stop()
	var (
		res     result
		readC   = read
		exitedC = exited
		ctxDone = ctx.Done()
		killC   <-chan time.Time
	)
	stop := func(why string) {
		if note == "" {
			note = why
			signalGroup(pid, false)
			killC = time.After(r.opts.KillGrace)
		}
	}
	for readC != nil || exitedC != nil {
		select {
		case res = <-readC:
			readC = nil
			if res.err != nil {
				stop("protocol violation")
			}
		case <-exitedC:
			exitedC = nil
		case <-timer.C:
			stop("chat timeout reached")
		case <-ctxDone:
			ctxDone = nil
			stop("stopped")
		case <-killC:
			killC = nil
			signalGroup(pid, true)
			note = noteKilled
		}
	}
	if note != "" && res.err == nil {
		res.err = fmt.Errorf("exec: chat program: %s", note)
	}
	diag := runtime.Diagnostics{ExitCode: -1, Note: note, Stderr: stderr.Text(redact)}
	if cmd.ProcessState != nil {
		diag.ExitCode = cmd.ProcessState.ExitCode()
	}
	if res.err == nil && diag.ExitCode != 0 {
		res.err = fmt.Errorf("exec: chat program exited with status %d", diag.ExitCode)
	}
	return res.replies, diag, res.err
}
