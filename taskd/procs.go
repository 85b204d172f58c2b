package taskd

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"agentgw/db"
	"agentgw/internal/procgroup"
	"agentgw/runtime"
)

// procWriteTimeout bounds one write of a process group record.
const procWriteTimeout = 15 * time.Second

// ProcessRecorder records the process groups of runtime processes in the
// store (runtime.ProcessTracker), and kills at start what a previous run
// left of them. Give it to Runtimes (RuntimeOptions.Tracker) after calling
// KillStale. Groups whose gateway still runs (another serve on the same
// database, by mistake) are left alone.
type ProcessRecorder struct {
	store *db.Store
	log   *slog.Logger

	mu     sync.Mutex
	groups map[int]db.ProcessGroup // by PGID, as recorded
	ends   sync.WaitGroup
}

var _ runtime.ProcessTracker = (*ProcessRecorder)(nil)

// NewProcessRecorder returns a recorder over store; log (nil: discard)
// receives what it kills and its failures.
func NewProcessRecorder(store *db.Store, log *slog.Logger) *ProcessRecorder {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &ProcessRecorder{store: store, log: log, groups: map[int]db.ProcessGroup{}}
}

// KillStale kills every process still in a group a previous run recorded
// and did not see end (its gateway died), then forgets those groups. Call
// it before any runtime starts and before tasks are recovered: once it
// returns, nothing of the previous run's tools can act, and a task the
// restart settles cannot be changed by them. Only groups that are still
// the recorded ones are killed (internal/procgroup).
func (p *ProcessRecorder) KillStale(ctx context.Context) error {
	recs, err := p.store.ProcessGroups(ctx)
	if err != nil {
		return fmt.Errorf("taskd: stale process groups: %w", err)
	}
	if len(recs) == 0 {
		return nil
	}
	groups := make([]procgroup.Group, len(recs))
	for i, r := range recs {
		groups[i] = procgroup.Group{PGID: r.PGID, BootID: r.BootID, StartTicks: r.StartTicks,
			OwnerPID: r.OwnerPID, OwnerStart: r.OwnerStartTicks}
	}
	n, err := procgroup.KillStale(groups)
	if err != nil {
		return fmt.Errorf("taskd: stale process groups: %w", err)
	}
	if n > 0 {
		p.log.Warn("killed processes a previous run left behind", "processes", n, "groups", len(recs))
	}
	for _, r := range recs {
		if err := p.store.ForgetProcessGroup(ctx, r); err != nil {
			return fmt.Errorf("taskd: stale process groups: %w", err)
		}
	}
	return nil
}

// Started implements runtime.ProcessTracker: it records the group led by
// pid before returning.
func (p *ProcessRecorder) Started(pid int) {
	if !procgroup.Supported {
		return
	}
	g, err := procgroup.Identify(pid)
	if err != nil {
		// Exited already, or /proc is unreadable.
		p.log.Warn("a runtime process group could not be recorded", "pid", pid, "err", err)
		return
	}
	rec := db.ProcessGroup{PGID: g.PGID, BootID: g.BootID, StartTicks: g.StartTicks,
		OwnerPID: g.OwnerPID, OwnerStartTicks: g.OwnerStart}
	ctx, cancel := context.WithTimeout(context.Background(), procWriteTimeout)
	defer cancel()
	if err := p.store.RecordProcessGroup(ctx, rec); err != nil {
		p.log.Warn("a runtime process group could not be recorded", "pid", pid, "err", err)
		return
	}
	p.mu.Lock()
	p.groups[pid] = rec
	p.mu.Unlock()
}

// Ended implements runtime.ProcessTracker: the record is deleted in the
// background.
func (p *ProcessRecorder) Ended(pid int) {
	p.mu.Lock()
	rec, ok := p.groups[pid]
	delete(p.groups, pid)
	p.mu.Unlock()
	if !ok {
		return
	}
	p.ends.Add(1)
	go func() {
		defer p.ends.Done()
		ctx, cancel := context.WithTimeout(context.Background(), procWriteTimeout)
		defer cancel()
		// A record left behind is harmless: the next start finds its
		// group gone and forgets it.
		_ = p.store.ForgetProcessGroup(ctx, rec)
	}()
}

// Wait waits for the deletions Ended started. Call it before closing the
// store.
func (p *ProcessRecorder) Wait() { p.ends.Wait() }
