package taskd

import (
	"container/heap"
	"context"
	"time"

	"agentgw/db"
	"agentgw/task"
)

// wakeHeap orders the running tasks by next wake-up. Guarded by
// Service.mu.
type wakeHeap []*liveTask

func (h wakeHeap) Len() int           { return len(h) }
func (h wakeHeap) Less(i, j int) bool { return h[i].wake.Before(h[j].wake) }
func (h wakeHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *wakeHeap) Push(x any) {
	lt := x.(*liveTask)
	lt.index = len(*h)
	*h = append(*h, lt)
}
func (h *wakeHeap) Pop() any {
	old := *h
	lt := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	lt.index = -1
	return lt
}

// setWakeLocked (re)places lt in the heap at wake, and wakes the timer
// loop if that is now the earliest. s.mu is held.
func (s *Service) setWakeLocked(lt *liveTask, wake time.Time) {
	lt.wake = wake
	if lt.index >= 0 {
		heap.Fix(&s.wakes, lt.index)
	} else {
		heap.Push(&s.wakes, lt)
	}
	if s.armed.IsZero() || wake.Before(s.armed) {
		s.armed = wake
		select {
		case s.kick <- struct{}{}:
		default:
		}
	}
}

// removeWakeLocked takes lt out of the heap. s.mu is held.
func (s *Service) removeWakeLocked(lt *liveTask) {
	if lt.index >= 0 {
		heap.Remove(&s.wakes, lt.index)
	}
}

// timerLoop waits for the earliest wake-up and ticks every task then due.
// One timer is armed at a time, for the earliest wake-up; a new earlier one
// re-arms it.
func (s *Service) timerLoop() {
	defer s.loops.Done()
	for {
		s.mu.Lock()
		var fire <-chan time.Time
		s.armed = time.Time{}
		if len(s.wakes) > 0 {
			s.armed = s.wakes[0].wake
			fire = s.clock.Until(s.armed)
		}
		s.mu.Unlock()
		select {
		case <-fire:
			s.fireDue()
		case <-s.kick:
		case <-s.ctx.Done():
			return
		}
	}
}

// fireDue takes every task due now out of the heap and ticks each. The
// commit hook puts it back at its new wake-up, or forgets it if it settled.
func (s *Service) fireDue() {
	now := s.clock.Now()
	var due []string
	s.mu.Lock()
	for len(s.wakes) > 0 && !now.Before(s.wakes[0].wake) {
		lt := heap.Pop(&s.wakes).(*liveTask)
		due = append(due, lt.id)
	}
	s.mu.Unlock()
	for _, id := range due {
		go s.tick(id)
	}
}

// tick applies the timers due to one task: its deadline, or the expiry of
// its pending input (re-issued or settled).
func (s *Service) tick(id string) {
	_, err := s.mutateHeld(context.Background(), id, func(_ *db.TaskTx, t *task.Task, now time.Time) (task.Step, error) {
		if t == nil {
			return task.Step{}, nil
		}
		return s.m.Tick(*t, now)
	})
	if err != nil && !isLeaseLost(err) {
		s.log.Error("taskd: timer commit failed", "task", id, "err", err)
		// Try again at the next pass rather than never.
		s.mu.Lock()
		if lt := s.live[id]; lt != nil && lt.index < 0 {
			s.setWakeLocked(lt, s.clock.Now().Add(time.Second))
		}
		s.mu.Unlock()
	}
}

// purgeLoop deletes expired tasks every purge interval.
func (s *Service) purgeLoop() {
	defer s.loops.Done()
	for {
		if _, err := s.Purge(s.ctx); err != nil && s.ctx.Err() == nil {
			s.log.Error("taskd: purge failed", "err", err)
		}
		select {
		case <-s.clock.After(s.opts.PurgeInterval):
		case <-s.ctx.Done():
			return
		}
	}
}

// Purge deletes every terminal task whose retention and replay window have
// ended (task.Task.Purgeable), together with its events, its input records
// and its hold on the pinned version, and returns how many it deleted.
func (s *Service) Purge(ctx context.Context) (int, error) {
	total := 0
	for {
		ids, err := s.store.DueForPurge(ctx, purgeBatch)
		if err != nil || len(ids) == 0 {
			return total, err
		}
		n := 0
		err = s.gc.Do(ctx, func(tx *db.TaskTx) error {
			n = 0
			for _, id := range ids {
				ok, err := tx.PurgeTask(id)
				if err != nil {
					return err
				}
				if ok {
					n++
				}
			}
			return nil
		})
		if err != nil {
			return total, err
		}
		total += n
		if len(ids) < purgeBatch || n == 0 {
			return total, nil
		}
	}
}
