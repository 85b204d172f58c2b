package taskd

import (
	"testing"

	"agentgw/task"
)

// A queue full of progress still takes every lifecycle event, in order,
// and drops only progress.
func TestNotesKeepLifecycleEvents(t *testing.T) {
	q := newNotes()
	ev := func(typ task.EventType, rev int64) note {
		return note{ev: task.Event{Type: typ, Revision: rev}}
	}
	rev := int64(0)
	for range noteQueue {
		rev++
		if !q.push(ev(task.EventProgress, rev)) {
			t.Fatalf("progress %d refused below the bound", rev)
		}
	}
	if q.push(ev(task.EventProgress, rev+1)) {
		t.Fatal("progress past the bound was queued")
	}
	for i, typ := range []task.EventType{task.EventStatus, task.EventInputRequired, task.EventCompleted, task.EventFailed, task.EventCancelled} {
		if !q.push(ev(typ, rev+1+int64(i))) {
			t.Fatalf("%s refused while only progress fills the queue", typ)
		}
	}
	q.close()
	var got []task.EventType
	last := int64(0)
	for {
		n, ok := q.pop()
		if !ok {
			break
		}
		if n.ev.Revision <= last {
			t.Fatalf("revision %d after %d: out of order", n.ev.Revision, last)
		}
		last = n.ev.Revision
		if n.ev.Type != task.EventProgress {
			got = append(got, n.ev.Type)
		}
	}
	if len(got) != 5 || got[4] != task.EventCancelled {
		t.Fatalf("lifecycle events popped: %v", got)
	}
	if q.push(ev(task.EventCompleted, last+1)) {
		t.Fatal("push after close was queued")
	}
}

// The lifecycle events have a bound of their own.
func TestNotesLifecycleBound(t *testing.T) {
	q := newNotes()
	for i := range lifecycleQueue {
		if !q.push(note{ev: task.Event{Type: task.EventCompleted, Revision: int64(i)}}) {
			t.Fatalf("event %d refused below the bound", i)
		}
	}
	if q.push(note{ev: task.Event{Type: task.EventCompleted}}) {
		t.Fatal("lifecycle event past its bound was queued")
	}
	if !q.push(note{ev: task.Event{Type: task.EventProgress}}) {
		t.Fatal("progress refused although no progress is queued")
	}
}
