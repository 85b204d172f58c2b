// Package runtimetest helps test runtimes: a Reporter that records every
// report in order and answers as the test decides.
package runtimetest

import (
	"testing"
	"time"

	"agentgw/runtime"
)

// Report kinds, one per Reporter method.
const (
	KindProgress  = "progress"
	KindInput     = "input"
	KindComplete  = "complete"
	KindFail      = "fail"
	KindCancelled = "cancelled"
)

// Report is one recorded report; the field matching Kind is set.
type Report struct {
	// Kind is one of the Kind constants.
	Kind string
	// Progress, Input, Result, Failure and Reason are the arguments of
	// Progress, RequestInput, Complete, Fail and Cancelled.
	Progress runtime.Progress
	Input    runtime.InputRequest
	Result   runtime.Result
	Failure  runtime.Failure
	Reason   string
}

// Terminal reports whether the report settles a task.
func (r Report) Terminal() bool {
	return r.Kind == KindComplete || r.Kind == KindFail || r.Kind == KindCancelled
}

// Recorder is a runtime.Reporter for tests.
type Recorder struct {
	// Respond, if set, is called for every report (after it is recorded)
	// and its result returned to the runtime. Nil answers nil.
	Respond func(Report) error
	ch      chan Report
}

var _ runtime.Reporter = (*Recorder)(nil)

// NewRecorder returns a Recorder that buffers up to 1024 reports.
func NewRecorder() *Recorder { return &Recorder{ch: make(chan Report, 1024)} }

func (r *Recorder) record(rep Report) error {
	r.ch <- rep
	if r.Respond != nil {
		return r.Respond(rep)
	}
	return nil
}

// Progress implements runtime.Reporter.
func (r *Recorder) Progress(p runtime.Progress) error {
	return r.record(Report{Kind: KindProgress, Progress: p})
}

// RequestInput implements runtime.Reporter.
func (r *Recorder) RequestInput(q runtime.InputRequest) error {
	return r.record(Report{Kind: KindInput, Input: q})
}

// Complete implements runtime.Reporter.
func (r *Recorder) Complete(res runtime.Result) error {
	return r.record(Report{Kind: KindComplete, Result: res})
}

// Fail implements runtime.Reporter.
func (r *Recorder) Fail(f runtime.Failure) error {
	return r.record(Report{Kind: KindFail, Failure: f})
}

// Cancelled implements runtime.Reporter.
func (r *Recorder) Cancelled(reason string) error {
	return r.record(Report{Kind: KindCancelled, Reason: reason})
}

// Next returns the next report, failing the test after timeout.
func (r *Recorder) Next(t testing.TB, timeout time.Duration) Report {
	t.Helper()
	select {
	case rep := <-r.ch:
		return rep
	case <-time.After(timeout):
		t.Fatal("runtimetest: no report")
	}
	return Report{}
}

// Len returns the number of reports not yet taken by Next.
func (r *Recorder) Len() int { return len(r.ch) }

// Wait waits for e to end, failing the test after timeout.
func Wait(t testing.TB, e runtime.Execution, timeout time.Duration) {
	t.Helper()
	select {
	case <-e.Done():
	case <-time.After(timeout):
		t.Fatal("runtimetest: execution did not end")
	}
}
