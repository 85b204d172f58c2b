package taskd

import (
	"context"
	"time"

	"agentgw/db"
)

// Store faults (db.Transient: a lock held past the busy timeout, an I/O
// error, a full disk) do not lose a transition: the commit is tried again
// with backoff until it succeeds or its time runs out. A runtime's report
// (a result above all) and the service's own transitions are retried until
// the task's deadline; a caller's command and an admission for
// callerRetryWindow, after which an admission answers
// <resource-constraint/> (type wait: the identical request may be sent
// again, and replays to the same task if it was admitted).
const (
	// retryFirst is the wait before the first retry; each retry doubles
	// it up to retryMax.
	retryFirst = 20 * time.Millisecond
	retryMax   = time.Second
	// callerRetryWindow bounds the retries of an admission or a caller's
	// command (the IQ waits meanwhile). One attempt may itself wait for
	// the store's busy timeout.
	callerRetryWindow = 5 * time.Second
)

// commit runs fn in a group commit. A store fault that may clear
// (db.Transient) is retried with backoff until the commit succeeds, or
// until until (zero: no bound but ctx) is reached, ctx ends or the service
// closes; the last fault is then returned. A full disk is returned at once
// when fullFails is set (admissions are refused at once). fn must be safe
// to run again: every closure of this package reads the committed task
// afresh.
func (s *Service) commit(ctx context.Context, until time.Time, fullFails bool, fn func(*db.TaskTx) error) error {
	delay := retryFirst
	for tries := 1; ; tries++ {
		err := s.gc.Do(ctx, fn)
		if err == nil {
			s.storeRecovered(tries)
			return nil
		}
		if !db.Transient(err) {
			return err
		}
		s.storeFault(err, tries)
		if fullFails && db.DiskFull(err) {
			return err
		}
		if !until.IsZero() && !s.clock.Now().Add(delay).Before(until) {
			return err
		}
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return err
		case <-s.ctx.Done():
			// Closing: the next start recovers the task as committed.
			t.Stop()
			return err
		}
		delay = min(2*delay, retryMax)
	}
}

// storeFault logs a store fault: a full disk once, when it starts (new
// tasks are refused until a commit succeeds again), any other fault at its
// first retry.
func (s *Service) storeFault(err error, tries int) {
	if db.DiskFull(err) {
		if s.diskFull.CompareAndSwap(false, true) {
			s.log.Error("taskd: the database's disk is full: new tasks are refused with <resource-constraint/> and running ones wait until space is freed",
				"db", s.store.Path(), "err", err)
		}
		return
	}
	if tries == 1 {
		s.log.Warn("taskd: store fault, retrying the commit", "err", err)
	}
}

// storeRecovered notes a successful commit: the end of a full disk, or of
// a fault that needed retries.
func (s *Service) storeRecovered(tries int) {
	if s.diskFull.Load() && s.diskFull.CompareAndSwap(true, false) {
		s.log.Info("taskd: the database accepts writes again: admitting new tasks", "db", s.store.Path())
	}
	if tries > 1 {
		s.log.Info("taskd: commit succeeded after retries", "tries", tries)
	}
}

// retryUntil is how long the service's own transitions of task id are
// retried: until its deadline, or for callerRetryWindow if it is not (or
// no longer) live.
func (s *Service) retryUntil(id string) time.Time {
	s.mu.Lock()
	lt := s.live[id]
	s.mu.Unlock()
	if lt != nil && !lt.deadline.IsZero() {
		return lt.deadline
	}
	return s.clock.Now().Add(callerRetryWindow)
}
