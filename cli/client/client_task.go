package client

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strconv"
	"time"

	"agentgw/agentclient"
	"agentgw/cli/cmdline"
	"agentgw/manifest"
	"agentgw/task"

	"mellium.im/xmpp/jid"
	"mellium.im/xmpp/stanza"
)

// Defaults of the call flags.
const (
	// defaultWait is how long call follows a task before it gives up
	// locally (the task goes on; state and result recover it).
	defaultWait = 30 * time.Minute
	// defaultPoll is how long call waits without an event before it asks
	// for the task state, in case notifications were lost.
	defaultPoll = 15 * time.Second
	// maxPoll caps the doubling of the poll interval.
	maxPoll = 2 * time.Minute
)

// callOptions are the flags and arguments of `client call`.
type callOptions struct {
	endpoint  jid.JID
	tool      string
	args      string
	version   string
	hash      string
	manifest  string
	requestID string
	deadline  string
	detach    bool
	wait      time.Duration
	poll      time.Duration
}

func parseCall(args []string) (clientRun, error) {
	fs := flag.NewFlagSet("client call", flag.ContinueOnError)
	var o callOptions
	fs.StringVar(&o.version, "version", "", "pinned API version, known out of band (skips manifest retrieval; needs -hash or -manifest)")
	fs.StringVar(&o.hash, "hash", "", "pinned Base64 SHA-256 manifest hash, known out of band")
	fs.StringVar(&o.manifest, "manifest", "", "trusted local copy of the manifest: pins its version and hash, validates the arguments")
	fs.StringVar(&o.requestID, "request-id", "", "reuse this request ID (to retry a call whose acceptance was lost); default: a new random one")
	fs.StringVar(&o.deadline, "deadline", "", "task deadline: an XEP-0082 date-time, or a duration from now such as 10m")
	fs.BoolVar(&o.detach, "detach", false, "return once the task is accepted, without following it")
	fs.DurationVar(&o.wait, "wait", defaultWait, "how long to follow the task (0: until it settles)")
	fs.DurationVar(&o.poll, "poll", defaultPoll, "ask for the task state after this long without an event")
	pos, err := cmdline.Parse(fs, args, 3, 3)
	if err != nil {
		return nil, err
	}
	if o.endpoint, err = endpointArg(pos[0]); err != nil {
		return nil, err
	}
	o.tool, o.args = pos[1], pos[2]
	if !manifest.ValidToolName(o.tool) {
		return nil, fmt.Errorf("%w: client call: %q is not a valid tool name", cmdline.ErrUsage, o.tool)
	}
	if o.manifest == "" && (o.version == "") != (o.hash == "") {
		return nil, fmt.Errorf("%w: client call: -version and -hash go together (or use -manifest)", cmdline.ErrUsage)
	}
	if o.version != "" && !manifest.ValidVersion(o.version) {
		return nil, fmt.Errorf("%w: client call: -version %q is not a valid API version", cmdline.ErrUsage, o.version)
	}
	if o.requestID != "" && !task.ValidID(o.requestID) {
		return nil, fmt.Errorf("%w: client call: -request-id must be 22 to 128 characters of [A-Za-z0-9._~-]", cmdline.ErrUsage)
	}
	if o.poll <= 0 || o.wait < 0 {
		return nil, fmt.Errorf("%w: client call: -poll must be positive and -wait not negative", cmdline.ErrUsage)
	}
	if _, err := parseDeadline(o.deadline, time.Now()); err != nil {
		return nil, err
	}
	return func(ctx context.Context, cmd *clientCmd, _ jid.JID) error { return cmd.call(ctx, o) }, nil
}

// parseDeadline reads -deadline: empty, a duration from now, or an
// XEP-0082 date-time.
func parseDeadline(s string, now time.Time) (task.Instant, error) {
	if s == "" {
		return task.Instant{}, nil
	}
	if d, err := time.ParseDuration(s); err == nil {
		if d <= 0 {
			return task.Instant{}, fmt.Errorf("%w: client call: -deadline must be in the future", cmdline.ErrUsage)
		}
		return task.InstantOf(now.Add(d).UTC().Truncate(time.Second)), nil
	}
	in, err := task.ParseDateTime(s)
	if err != nil {
		return task.Instant{}, fmt.Errorf("%w: client call: -deadline %q is neither a duration nor an XEP-0082 date-time", cmdline.ErrUsage, s)
	}
	return in, nil
}

// call is `client call`: pin, validate locally, invoke with a CSPRNG
// request ID (retrying the identical request when the acceptance is lost),
// then follow the task to its end (client guide, steps 3 to 10).
func (cmd *clientCmd) call(ctx context.Context, o callOptions) error {
	var p *pin
	var err error
	if o.version != "" || o.manifest != "" {
		p, err = pinOutOfBand(o.endpoint, o.tool, o.version, o.hash, o.manifest)
	} else {
		p, err = cmd.ac.Pin(ctx, o.endpoint, o.tool)
	}
	if err != nil {
		return err
	}
	args, err := p.CanonicalArgs([]byte(o.args))
	if err != nil {
		return err
	}
	reqID := o.requestID
	if reqID == "" {
		if reqID, err = agentclient.NewRequestID(); err != nil {
			return err
		}
	}
	deadline, err := parseDeadline(o.deadline, time.Now())
	if err != nil {
		return err
	}
	inv := task.Invoke{RequestID: reqID, Tool: o.tool, Arguments: string(args), Deadline: deadline}
	// Announce the request before sending it: if this process dies, the
	// same request can be retried from these values.
	req := outRequest{Kind: "request", Endpoint: o.endpoint.String(), Tool: o.tool, RequestID: reqID,
		Version: p.Version, Hash: p.HashB64(), Pin: p.Source}
	if !deadline.IsZero() {
		req.Deadline = deadline.String()
	}
	if cmd.json {
		cmd.emit(req)
	} else {
		cmd.printf("calling %s %s (version %s, sha-256 %s, pinned: %s)\n", o.endpoint, agentclient.SafeText(o.tool, 100), agentclient.SafeText(p.Version, 64), p.HashB64(), p.Source)
		cmd.printf("request %s", reqID)
		if req.Deadline != "" {
			cmd.printf(", deadline %s", req.Deadline)
		}
		cmd.printf("\n")
	}
	acc, retried, err := cmd.ac.Invoke(ctx, p, inv)
	if err != nil {
		return err
	}
	if cmd.json {
		cmd.emit(outAccepted{Kind: "accepted", Endpoint: o.endpoint.String(), TaskID: acc.TaskID, RequestID: acc.RequestID,
			Revision: acc.Revision, Created: formatTime(acc.Created), RetainUntil: formatTime(acc.RetainUntil)})
	} else {
		cmd.printf("accepted: task %s (revision 0, created %s, retained until %s)\n", acc.TaskID, formatTime(acc.Created), formatTime(acc.RetainUntil))
	}
	if o.detach {
		if !cmd.json {
			cmd.printf("follow it with: %s state %s %s\n", cmd.hint, o.endpoint, acc.TaskID)
		}
		return nil
	}
	f := newFollower(cmd, p, acc.TaskID)
	// After a retried or reused request ID the acceptance may be a replay
	// of a task that moved on long ago, its events sent elsewhere: start
	// from its state rather than wait for events.
	return f.run(ctx, o.wait, o.poll, retried || o.requestID != "")
}

// outcome turns a terminal result into the command's outcome: nil for a
// completed task (even one whose tool reports isError: that is still a
// completed call), an error for a failed or cancelled one.
func outcome(r task.TaskResult) error {
	switch r.State {
	case task.StateCompleted:
		return nil
	case task.StateCancelled:
		return fmt.Errorf("task %s was cancelled", r.TaskID)
	}
	f := agentclient.FailureOf(r.Payload)
	return fmt.Errorf("task %s failed: %s: %s", r.TaskID, agentclient.SafeText(f.Code, 128), agentclient.SafeText(f.Message, 400))
}

func (cmd *clientCmd) stateCmd(ctx context.Context, endpoint jid.JID, taskID string) error {
	if !task.ValidID(taskID) {
		return fmt.Errorf("%w: client state: %q is not a task ID", cmdline.ErrUsage, taskID)
	}
	st, err := cmd.ac.TaskState(ctx, endpoint, taskID)
	if err != nil {
		return err
	}
	cmd.printState(st)
	return nil
}

func (cmd *clientCmd) resultCmd(ctx context.Context, endpoint jid.JID, taskID string) error {
	if !task.ValidID(taskID) {
		return fmt.Errorf("%w: client result: %q is not a task ID", cmdline.ErrUsage, taskID)
	}
	r, err := cmd.ac.TaskResult(ctx, endpoint, taskID)
	if agentclient.Condition(err) == stanza.UnexpectedRequest {
		return fmt.Errorf("task %s has not settled yet: see %s state %s %s", taskID, cmd.hint, endpoint, taskID)
	}
	if err != nil {
		return err
	}
	cmd.printResult(r)
	return outcome(r)
}

// revisionFlag is an optional -revision flag.
type revisionFlag struct {
	set bool
	n   int64
}

func (r *revisionFlag) String() string { return strconv.FormatInt(r.n, 10) }

func (r *revisionFlag) Set(s string) error {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return errors.New("must be a non-negative integer")
	}
	r.set, r.n = true, n
	return nil
}

func parseCancel(args []string) (clientRun, error) {
	fs := flag.NewFlagSet("client cancel", flag.ContinueOnError)
	var rev revisionFlag
	fs.Var(&rev, "revision", "expected revision (default: the current one, from the task state)")
	reason, hasReason := "", false
	fs.Func("reason", "reason given to the target", func(s string) error { reason, hasReason = s, true; return nil })
	pos, err := cmdline.Parse(fs, args, 2, 2)
	if err != nil {
		return nil, err
	}
	ep, err := endpointArg(pos[0])
	if err != nil {
		return nil, err
	}
	if !task.ValidID(pos[1]) {
		return nil, fmt.Errorf("%w: client cancel: %q is not a task ID", cmdline.ErrUsage, pos[1])
	}
	return func(ctx context.Context, cmd *clientCmd, _ jid.JID) error {
		return cmd.cancel(ctx, ep, task.Cancel{TaskID: pos[1], HasReason: hasReason, Reason: reason}, rev)
	}, nil
}

// cancel requests cancellation at the latest known revision. Without an
// explicit -revision, a <conflict/> (the revision moved: progress came in)
// is retried at the new current revision.
func (cmd *clientCmd) cancel(ctx context.Context, endpoint jid.JID, c task.Cancel, rev revisionFlag) error {
	expected := int64(-1)
	if rev.set {
		expected = rev.n
	}
	ack, err := cmd.ac.Cancel(ctx, endpoint, c, expected)
	if err != nil {
		return err
	}
	if cmd.json {
		return cmd.emit(outAck{Kind: "cancel-accepted", TaskID: ack.TaskID, Revision: ack.Revision})
	}
	cmd.printf("cancellation of %s accepted at revision %d (advisory: the task may still complete)\n", ack.TaskID, ack.Revision)
	return nil
}

func parseInput(args []string) (clientRun, error) {
	fs := flag.NewFlagSet("client input", flag.ContinueOnError)
	var rev revisionFlag
	fs.Var(&rev, "revision", "expected revision (default: the current one, from the task state)")
	pos, err := cmdline.Parse(fs, args, 4, 4)
	if err != nil {
		return nil, err
	}
	ep, err := endpointArg(pos[0])
	if err != nil {
		return nil, err
	}
	if !task.ValidID(pos[1]) || !task.ValidID(pos[2]) {
		return nil, fmt.Errorf("%w: client input: task and request IDs are 22 to 128 characters of [A-Za-z0-9._~-]", cmdline.ErrUsage)
	}
	return func(ctx context.Context, cmd *clientCmd, _ jid.JID) error {
		return cmd.input(ctx, ep, pos[1], pos[2], pos[3], rev)
	}, nil
}

// input answers an input request. The answer is checked against the
// pending request's schema first when the task state shows it pending.
// An explicit -revision sends the answer even when it is not pending any
// more: the identical answer is then a replay the target recognizes.
func (cmd *clientCmd) input(ctx context.Context, endpoint jid.JID, taskID, requestID, answer string, rev revisionFlag) error {
	canon, err := agentclient.CanonicalInput([]byte(answer))
	if err != nil {
		return err
	}
	expected := int64(-1)
	if rev.set {
		expected = rev.n
	}
	ack, err := cmd.ac.ProvideInput(ctx, endpoint, taskID, requestID, canon, expected)
	if err != nil {
		return err
	}
	if cmd.json {
		return cmd.emit(outAck{Kind: "input-accepted", TaskID: ack.TaskID, Revision: ack.Revision})
	}
	cmd.printf("input for %s accepted at revision %d\n", ack.TaskID, ack.Revision)
	return nil
}
