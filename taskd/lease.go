package taskd

import (
	"context"
	"errors"
	"fmt"
	"time"

	"agentgw/db"
	"agentgw/internal/instance"
	"agentgw/internal/pause"
	"agentgw/runtime"
	"agentgw/task"
)

// Several gateways on one store (db/lease.go). Each Service has an
// instance ID, made at New, and holds the tasks it admitted or claimed
// under leases in the store: the lease loop renews them and claims those
// whose lease lapsed (or whose process on this machine is gone); only the
// holder commits a task's reports, start and timers (mutateHeld); a cancel
// or input reaching another gateway leaves a signal the holder polls; Close
// lets the leases lapse at once. In full: docs/task-package.md, "Several
// gateways".

// Lease tunables.
const (
	// DefaultLeaseRenew is how often a gateway renews its leases.
	DefaultLeaseRenew = 5 * time.Second
	// DefaultLeaseLapse is how long a lease lasts without renewal: the
	// longest a task waits for another gateway once its holder has died.
	DefaultLeaseLapse = 15 * time.Second
	// DefaultSignalPoll is how often a holder looks for the signals other
	// gateways left for it.
	DefaultSignalPoll = 100 * time.Millisecond
	// claimBatch bounds the tasks one claim transaction takes, and
	// signalBatch the signals one poll reads.
	claimBatch  = 256
	signalBatch = 256
	// leaseWriteTimeout bounds one lease write.
	leaseWriteTimeout = 10 * time.Second
)

// errLeaseLost answers a holder's step on a task another gateway holds
// now. It is runtime.ErrSettled to the runtime: nothing it reports can
// change the task any more.
var errLeaseLost = fmt.Errorf("%w: another gateway holds the task", runtime.ErrSettled)

// Instance returns the service's instance ID, the holder of its leases.
func (s *Service) Instance() string { return s.id }

// claimAll claims every task whose lease lapsed or whose holder is known
// gone, up to limit (0: no limit), claimBatch per group commit.
func (s *Service) claimAll(ctx context.Context, limit int) ([]db.Claim, error) {
	var out []db.Claim
	for {
		room := claimBatch
		if limit > 0 {
			room = min(room, limit-len(out))
		}
		if room <= 0 {
			return out, nil
		}
		var got []db.Claim
		err := s.commit(ctx, time.Time{}, false, func(tx *db.TaskTx) error {
			got = nil
			holders, err := tx.LeaseHolders()
			if err != nil {
				return err
			}
			for _, h := range holders {
				if h == s.id || len(got) >= room || !instance.Gone(h) {
					continue
				}
				cs, err := tx.ClaimFrom(s.id, h, s.opts.LeaseLapse, room-len(got))
				if err != nil {
					return err
				}
				got = append(got, cs...)
			}
			if len(got) < room {
				cs, err := tx.ClaimLapsed(s.id, s.opts.LeaseLapse, room-len(got))
				if err != nil {
					return err
				}
				got = append(got, cs...)
			}
			return nil
		})
		if err != nil {
			return out, err
		}
		out = append(out, got...)
		if len(got) < room {
			return out, nil
		}
	}
}

// adopt makes claimed tasks live here and returns their IDs, for recover.
func (s *Service) adopt(claims []db.Claim) ([]string, error) {
	var ids []string
	for _, c := range claims {
		t, err := decode(c.Task)
		if err != nil {
			return ids, err
		}
		s.mu.Lock()
		if s.live[t.ID] == nil {
			s.addLiveLocked(&t)
			s.live[t.ID].dispatched = true
			ids = append(ids, t.ID)
		}
		s.mu.Unlock()
	}
	return ids, nil
}

// leaseLoop renews the leases and takes over lapsed ones until Close.
func (s *Service) leaseLoop() {
	defer s.loops.Done()
	tick := time.NewTicker(s.opts.LeaseRenew)
	defer tick.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-tick.C:
		}
		s.renew()
		s.takeOver()
	}
}

// renew extends this gateway's leases and drops the tasks it no longer
// holds.
func (s *Service) renew() {
	s.mu.Lock()
	live := make(map[string]bool, len(s.live))
	for id := range s.live {
		live[id] = true
	}
	admitting := s.reserved > 0
	s.mu.Unlock()
	if len(live) == 0 && !admitting {
		// Nothing held: no write. A task admitted from now on has a
		// lease of LeaseLapse, which the next tick renews in time.
		return
	}
	ctx, cancel := context.WithTimeout(s.ctx, leaseWriteTimeout)
	defer cancel()
	// Not in the group commit: behind a long queue of task writes the
	// renewal would wait until the leases lapsed (db.Store.RenewLeases).
	var (
		held []string
		err  error
	)
	for delay := retryFirst; ; delay = min(2*delay, retryMax) {
		held, err = s.store.RenewLeases(ctx, s.id, s.opts.LeaseLapse)
		if err == nil || !db.Transient(err) || !pause.For(ctx, delay) {
			break
		}
	}
	if err != nil {
		if s.ctx.Err() == nil {
			s.log.Warn("taskd: leases not renewed", "err", err)
		}
		return
	}
	have := make(map[string]bool, len(held))
	for _, id := range held {
		have[id] = true
	}
	// Only tasks live before the renewal: one admitted since may not be
	// in the list.
	for id := range live {
		if !have[id] {
			s.drop(id)
		}
	}
	s.letStraysGo(ctx, held, live)
}

// letStraysGo lets the lease lapse at once of each task held here that was
// not live at this renewal nor at the one before: one whose admission
// committed while its caller was told it had failed (the connection was
// lost during COMMIT), so that it was never made live here. Renewed with the rest, it would wait for ever; let go,
// it is claimed at once (takeOver, after the renewal) and recovered as a
// dead gateway's task is. Two renewals in a row pass over an admission
// between its commit and its hook, which makes it live.
func (s *Service) letStraysGo(ctx context.Context, held []string, live map[string]bool) {
	prev, next := s.strays, map[string]bool{}
	s.strays = next
	var gone []string
	for _, id := range held {
		switch {
		case live[id]:
		case prev[id]:
			gone = append(gone, id)
		default:
			next[id] = true
		}
	}
	if len(gone) == 0 {
		return
	}
	s.log.Warn("taskd: tasks held here but never made live (a commit whose outcome was lost): letting their leases lapse, to be recovered", "tasks", len(gone))
	if err := s.store.ReleaseLeases(ctx, s.id, gone...); err != nil {
		if s.ctx.Err() == nil {
			s.log.Warn("taskd: leases not released", "err", err)
		}
		// Tried again at the next renewal.
		for _, id := range gone {
			next[id] = true
		}
	}
}

// takeOver claims what lapsed, as far as capacity allows, and recovers it.
func (s *Service) takeOver() {
	s.mu.Lock()
	room := s.opts.MaxActive - len(s.live) - s.reserved
	s.mu.Unlock()
	if room <= 0 {
		return
	}
	ctx, cancel := context.WithTimeout(s.ctx, leaseWriteTimeout)
	defer cancel()
	claims, err := s.claimAll(ctx, room)
	if err != nil && s.ctx.Err() == nil {
		s.log.Warn("taskd: claiming lapsed leases", "err", err)
	}
	if len(claims) == 0 {
		return
	}
	from := map[string]int{}
	for _, c := range claims {
		if c.From != s.id {
			// Its own leases lapse when a gateway could not renew
			// them in time; claimed back, they are no takeover.
			from[c.From]++
		}
	}
	for h, n := range from {
		s.log.Info("taking over tasks of a gateway that stopped renewing its leases", "tasks", n, "from", h, "instance", s.id)
	}
	ids, err := s.adopt(claims)
	if err != nil {
		s.log.Error("taskd: take over", "err", err)
	}
	for _, id := range ids {
		go s.recover(id)
	}
}

// drop forgets a task another gateway holds now and stops its execution
// here: whatever it reports is refused (errLeaseLost).
func (s *Service) drop(id string) {
	s.mu.Lock()
	lt := s.live[id]
	if lt != nil {
		delete(s.live, id)
		s.removeWakeLocked(lt)
	}
	s.mu.Unlock()
	if lt == nil {
		return
	}
	s.log.Warn("taskd: another gateway holds the task now; its execution here stops", "task", id)
	if lt.stop != nil {
		lt.stop()
	}
}

// release lets this gateway's leases lapse at once (Close).
func (s *Service) release() {
	ctx, cancel := context.WithTimeout(context.Background(), leaseWriteTimeout)
	defer cancel()
	if err := s.store.ReleaseLeases(ctx, s.id); err != nil {
		s.log.Warn("taskd: leases not released; other gateways take the tasks over once they lapse", "err", err)
	}
}

// signalLoop hands the signals other gateways left to the executions here.
func (s *Service) signalLoop() {
	defer s.loops.Done()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-time.After(s.opts.SignalPoll):
		}
		s.takeSignals()
	}
}

// takeSignals reads the signals for this gateway's tasks, hands over those
// of live tasks, in order, and deletes them. A task claimed but not yet
// adopted keeps its signals for the next poll.
func (s *Service) takeSignals() {
	s.mu.Lock()
	idle := len(s.live) == 0
	s.mu.Unlock()
	if idle {
		// Signals wait in the store for a live task; with none, the
		// poll would read nothing it could hand over (and an idle
		// gateway would query its store ten times a second).
		return
	}
	ctx, cancel := context.WithTimeout(s.ctx, leaseWriteTimeout)
	defer cancel()
	sigs, err := s.store.Signals(ctx, s.id, signalBatch)
	if err != nil || len(sigs) == 0 {
		if err != nil && s.ctx.Err() == nil {
			s.log.Warn("taskd: reading signals", "err", err)
		}
		return
	}
	var done []db.TaskSignal
	for _, sig := range sigs {
		s.mu.Lock()
		live := s.live[sig.TaskID] != nil
		s.mu.Unlock()
		if !live {
			continue
		}
		// The step that left the signal was committed elsewhere: the
		// task's timer follows it here.
		s.refreshWake(ctx, sig.TaskID)
		switch sig.Kind {
		case db.SignalInput:
			s.deliverInput(sig.TaskID, sig.Payload)
		case db.SignalCancel:
			s.deliverCancel(sig.TaskID)
		}
		done = append(done, sig)
	}
	if err := s.store.DeleteSignals(ctx, done); err != nil && s.ctx.Err() == nil {
		// Handed over again at the next poll: an execution may see an
		// answer twice, as after a restart.
		s.log.Warn("taskd: deleting signals", "err", err)
	}
}

// refreshWake sets a live task's timer from its committed state, after a
// step another gateway committed.
func (s *Service) refreshWake(ctx context.Context, id string) {
	rec, err := s.store.Task(ctx, id)
	if err != nil {
		return
	}
	t, err := decode(rec)
	if err != nil || t.State.Terminal() {
		return
	}
	s.mu.Lock()
	if lt := s.live[id]; lt != nil {
		s.setWakeLocked(lt, t.NextWake())
	}
	s.mu.Unlock()
}

// signal leaves sig for the holder of its task if that is another
// gateway, in the commit, and reports whether it did; if this gateway
// holds the task, the caller hands it over itself once committed.
func (s *Service) signal(tx *db.TaskTx, t *task.Task, kind string, payload []byte) (bool, error) {
	holder, err := tx.LeaseHolder(t.ID)
	if err != nil {
		return false, err
	}
	if holder == s.id {
		return false, nil
	}
	if payload == nil {
		payload = []byte{}
	}
	return true, tx.PutSignal(db.TaskSignal{TaskID: t.ID, Revision: t.Revision, Kind: kind, Payload: payload})
}

// held checks, in a holder's commit, that this gateway still holds task
// id; cur is the committed task (nil: none).
func (s *Service) held(tx *db.TaskTx, id string, cur *task.Task) error {
	if cur == nil || cur.State.Terminal() {
		return nil
	}
	holder, err := tx.LeaseHolder(id)
	if err != nil {
		return err
	}
	if holder != s.id {
		return errLeaseLost
	}
	return nil
}

// isLeaseLost reports whether err is errLeaseLost.
func isLeaseLost(err error) bool { return errors.Is(err, errLeaseLost) }
