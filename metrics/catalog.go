package metrics

import (
	"errors"
	"fmt"
	"io"
	"regexp"
	"runtime"
	"sync/atomic"
	"time"

	"mellium.im/xmpp/stanza"
)

// The catalog: every metric agentgw exports. Hooks in the gateway, the task
// service and the store call the functions below; the families are
// package-level so that those hooks need no plumbing.
var (
	// IQRequests counts get/set IQs by kind (the payload's protocol, from
	// iqKinds) and outcome ("result" or the error condition).
	IQRequests = NewCounter("agentgw_iq_requests_total", "IQ requests answered, by kind and outcome (result or the stanza error condition).", "kind", "outcome")
	// IQDuration is the time from taking up a request to its answer.
	IQDuration = NewHistogram("agentgw_iq_duration_seconds", "Time to answer an IQ request that a handler took up, by kind.",
		[]float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5}, "kind")
	// Admissions counts task invocations by outcome: accepted (a new
	// task), replayed (an earlier admission answered again) or refused.
	Admissions = NewCounter("agentgw_task_admissions_total", "Task invocations by outcome: accepted, replayed or refused.", "outcome")
	// Commits counts group commits of task writes, and CommitBatch their
	// sizes (closures per commit).
	Commits     = NewCounter("agentgw_task_commits_total", "Group commits of task writes.")
	CommitBatch = NewHistogram("agentgw_task_commit_batch_size", "Task writes per group commit.",
		[]float64{1, 2, 4, 8, 16, 32, 64, 128, 256})
	// Tasks is the number of stored tasks by state, read at scrape time.
	Tasks = NewGaugeFunc("agentgw_tasks", "Stored tasks by state.", "state")
	// StreamReconnects counts component streams lost and redialled.
	StreamReconnects = NewCounter("agentgw_stream_reconnects_total", "Component streams lost; each is followed by a reconnect.")
	// RuntimeRestarts counts restarts of crashed tool servers, by runtime.
	RuntimeRestarts = NewCounter("agentgw_runtime_restarts_total", "Restarts of a tool server after it failed or exited, by runtime.", "runtime")

	// MCPMessagesRefused counts the messages `agentgw mcp` did not queue,
	// by reason: sender (not allowed by accept_from), rate (past the
	// sender's rate) or backlog (the writer is behind).
	MCPMessagesRefused = NewCounter("agentgw_mcp_messages_refused_total", "Received messages agentgw mcp did not queue, by reason: sender (accept_from), rate (sender_rate_limit) or backlog.", "reason")

	// MCPRefused counts what the MCP listeners refused, by listener (mcp:
	// `agentgw mcp -http`; chat: [chat] mcp_listen; stdio) and reason (origin, host,
	// token, body, batch, sessions, scope); each is also logged once.
	MCPRefused = NewCounter("agentgw_mcp_refused_total", "Requests the MCP listeners refused, by listener (mcp, chat or stdio) and reason: origin, host, token, body, batch, sessions or scope.", "listener", "reason")

	// SandboxABI is the Landlock ABI that confines the runtime children; 0
	// when they run without Landlock (runtime.sandbox off, or a kernel
	// without it).
	SandboxABI = NewGaugeFunc("agentgw_sandbox_landlock_abi", "Landlock ABI confining the runtime children; 0: they run unsandboxed.", "")

	families = []metric{IQRequests, IQDuration, Admissions, Commits, CommitBatch, Tasks, StreamReconnects, RuntimeRestarts, MCPMessagesRefused, MCPRefused, SandboxABI, process{}}
)

// process describes the Go process: goroutines and heap.
type process struct{}

func (process) write(w io.Writer) {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	header(w, "agentgw_goroutines", "Goroutines of the process.", "gauge")
	fmt.Fprintf(w, "agentgw_goroutines %d\n", runtime.NumGoroutine())
	header(w, "agentgw_heap_bytes", "Bytes of allocated heap objects.", "gauge")
	fmt.Fprintf(w, "agentgw_heap_bytes %d\n", ms.HeapAlloc)
}

// IQKinds is the metrics label (the kind of agentgw_iq_requests_total) of
// each IQ payload namespace the gateway answers. It is a value: the gateway
// builds it from its surface table (NewIQKinds) where it is constructed,
// and puts it in force with UseIQKinds; no init function fills a table.
type IQKinds struct{ byNS map[string]string }

// kindRE is what a kind label may be.
var kindRE = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)

// NewIQKinds makes the labels byNS (kind by payload namespace) into an
// IQKinds. A kind that is "other" (the label of every namespace not
// listed), that is not [a-z][a-z0-9_]*, or that two namespaces share is an
// error.
func NewIQKinds(byNS map[string]string) (IQKinds, error) {
	k := IQKinds{byNS: make(map[string]string, len(byNS))}
	owner := make(map[string]string, len(byNS))
	for ns, kind := range byNS {
		if !kindRE.MatchString(kind) || kind == "other" {
			return IQKinds{}, fmt.Errorf("metrics: IQ kind %q for %s: want [a-z][a-z0-9_]*, not other", kind, ns)
		}
		if prev, dup := owner[kind]; dup {
			return IQKinds{}, fmt.Errorf("metrics: IQ kind %s given to %s and to %s", kind, min(prev, ns), max(prev, ns))
		}
		owner[kind], k.byNS[ns] = ns, kind
	}
	return k, nil
}

// iqKinds is the table in force (UseIQKinds); before any, every IQ counts
// as "other". IQ reads it with one atomic load, on every stanza.
var iqKinds atomic.Pointer[IQKinds]

// UseIQKinds makes k the labels IQ and IQSeriesOf count under; a peer's
// namespace that k does not list is "other", so peers cannot create
// series. Every gateway of a process builds the same k from the same
// table, so a second call changes nothing.
func UseIQKinds(k IQKinds) { iqKinds.Store(&k) }

// IQ records an answered IQ request with the payload namespace ns and the
// handler's error (nil for a result). took < 0 records no latency: the
// request was refused before any handler took it up.
func IQ(ns string, err error, took time.Duration) {
	kind, outcome := iqLabels(ns, err)
	IQRequests.Inc(kind, outcome)
	if took >= 0 {
		IQDuration.Observe(took.Seconds(), kind)
	}
}

func iqLabels(ns string, err error) (kind, outcome string) {
	ok := false
	if k := iqKinds.Load(); k != nil {
		kind, ok = k.byNS[ns]
	}
	if !ok {
		kind = "other"
	}
	outcome = "result"
	if err != nil {
		outcome = string(stanza.InternalServerError)
		if c := condition(err); c != "" {
			outcome = c
		}
	}
	return kind, outcome
}

// IQSeries is IQ with its series found once: for an answer given many
// times over (the gateway's answer memo), recording it is then two atomic
// adds and a bucket's, without a lookup.
type IQSeries struct {
	requests *atomic.Uint64
	duration *histSeries
}

// IQSeriesOf returns the series IQ(ns, err, …) records in.
func IQSeriesOf(ns string, err error) IQSeries {
	kind, outcome := iqLabels(ns, err)
	return IQSeries{requests: IQRequests.seriesOf([]string{kind, outcome}), duration: IQDuration.seriesOf([]string{kind})}
}

// Observe records one answer that took took, as IQ does.
func (s IQSeries) Observe(took time.Duration) {
	s.requests.Add(1)
	IQDuration.observe(s.duration, took.Seconds())
}

// condition is the stanza error condition err is or wraps, or "". A chain
// of single wraps is walked without errors.As, whose target escapes to the
// heap on every call.
func condition(err error) string {
	for e := err; e != nil; e = errors.Unwrap(e) {
		if se, ok := e.(stanza.Error); ok {
			return string(se.Condition)
		}
	}
	var se stanza.Error
	if errors.As(err, &se) {
		return string(se.Condition)
	}
	return ""
}

// Admission records the outcome of a task invocation.
func Admission(err error, replay bool) {
	switch {
	case err != nil:
		Admissions.Inc("refused")
	case replay:
		Admissions.Inc("replayed")
	default:
		Admissions.Inc("accepted")
	}
}

// Commit records a group commit of n task writes.
func Commit(n int) {
	Commits.Inc()
	CommitBatch.Observe(float64(n))
}

// WriteText writes every metric in the Prometheus text format.
func WriteText(w io.Writer) {
	for _, m := range families {
		m.write(w)
	}
}
