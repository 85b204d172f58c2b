package taskd

import (
	"sync"

	"agentgw/task"
)

// noteQueue bounds. Progress events are the only ones a busy task emits
// without limit, so they are the only ones dropped: a caller still gets
// every status change, input request and terminal event even when the
// stream was down long enough for the queue to fill.
const (
	// noteQueue bounds the progress events waiting to be sent, including
	// those held while no stream is up (Options.Ready); past it new
	// progress events are dropped with a warning, and task-state recovers
	// them.
	noteQueue = 8192
	// lifecycleQueue bounds the other events (status, input_required and
	// the terminal ones) waiting to be sent. Each task emits a handful of
	// them, and at most DefaultMaxActive tasks run, so it is reached only
	// past tens of thousands of tasks settling while the stream is down;
	// past it they are dropped too, and task-state recovers them.
	lifecycleQueue = 8 * noteQueue
)

// notes is the queue between the commit hooks (push, which never blocks)
// and the notifier (pop), in commit order.
type notes struct {
	mu        sync.Mutex
	queue     []note
	progress  int // progress events in queue
	closed    bool
	available chan struct{} // holds a token while queue is not empty
}

func newNotes() *notes { return &notes{available: make(chan struct{}, 1)} }

// push queues n, or reports false if its kind's bound is reached.
func (q *notes) push(n note) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	isProgress := n.ev.Type == task.EventProgress
	if q.closed || (isProgress && q.progress >= noteQueue) || (!isProgress && len(q.queue)-q.progress >= lifecycleQueue) {
		return false
	}
	if isProgress {
		q.progress++
	}
	q.queue = append(q.queue, n)
	select {
	case q.available <- struct{}{}:
	default:
	}
	return true
}

// pop waits for the oldest event; ok is false once the queue is closed and
// empty.
func (q *notes) pop() (n note, ok bool) {
	for {
		q.mu.Lock()
		if len(q.queue) > 0 {
			n = q.queue[0]
			q.queue[0] = note{}
			q.queue = q.queue[1:]
			if len(q.queue) == 0 {
				q.queue = nil // let the backing array go after a burst
			}
			if n.ev.Type == task.EventProgress {
				q.progress--
			}
			q.mu.Unlock()
			return n, true
		}
		closed := q.closed
		q.mu.Unlock()
		if closed {
			return note{}, false
		}
		<-q.available
	}
}

// len is the number of events waiting.
func (q *notes) len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.queue)
}

// close makes pop return false once the queue has drained.
func (q *notes) close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	select {
	case q.available <- struct{}{}:
	default:
	}
}
