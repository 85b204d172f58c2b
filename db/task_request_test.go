package db_test

import (
	"context"
	"errors"
	"testing"

	"agentgw/db"
)

// TestTaskByRequestAndLastEvent: the reader-pool lookups of the ad-hoc
// command sessions and of the caller's task requests: a task by its replay
// record or by its ID, for its caller at its endpoint only, and the latest
// event of one type.
func TestTaskByRequestAndLastEvent(t *testing.T) {
	ctx := context.Background()
	s, _, gc := withWeather(t)
	rec := taskRec("task-1", "req-1")
	err := gc.Do(ctx, func(tx *db.TaskTx) error {
		if err := insert(tx, rec); err != nil {
			return err
		}
		return tx.InsertEvents([]db.TaskEvent{
			{TaskID: "task-1", Revision: 1, ID: "evt-1", Type: "status", Payload: []byte(`{}`)},
			{TaskID: "task-1", Revision: 2, ID: "evt-2", Type: "progress", Payload: []byte(`{"percent":10}`)},
			{TaskID: "task-1", Revision: 3, ID: "evt-3", Type: "progress", Payload: []byte(`{"percent":20}`)},
			{TaskID: "task-1", Revision: 4, ID: "evt-4", Type: "status", Payload: []byte(`{}`)},
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.TaskByRequest(ctx, rec.Caller, rec.Target, "req-1")
	if err != nil || got.ID != "task-1" {
		t.Fatalf("TaskByRequest = %+v, %v", got, err)
	}
	for _, k := range [][3]string{
		{"bob@example.org", rec.Target, "req-1"},
		{rec.Caller, "other@agents.example", "req-1"},
		{rec.Caller, rec.Target, "req-2"},
	} {
		if _, err := s.TaskByRequest(ctx, k[0], k[1], k[2]); !errors.Is(err, db.ErrNotFound) {
			t.Errorf("TaskByRequest%v: %v", k, err)
		}
	}
	got, err = s.CallerTask(ctx, "task-1", rec.Caller, rec.Target)
	if err != nil || got.ID != "task-1" || string(got.Doc) != string(rec.Doc) {
		t.Fatalf("CallerTask = %+v, %v", got, err)
	}
	for _, k := range [][3]string{
		{"task-1", "bob@example.org", rec.Target},
		{"task-1", rec.Caller, "other@agents.example"},
		{"task-2", rec.Caller, rec.Target},
	} {
		if _, err := s.CallerTask(ctx, k[0], k[1], k[2]); !errors.Is(err, db.ErrNotFound) {
			t.Errorf("CallerTask%v: %v", k, err)
		}
	}
	ev, err := s.LastTaskEvent(ctx, "task-1", "progress")
	if err != nil || ev.Revision != 3 || string(ev.Payload) != `{"percent":20}` {
		t.Errorf("LastTaskEvent = %+v, %v", ev, err)
	}
	if _, err := s.LastTaskEvent(ctx, "task-1", "completed"); !errors.Is(err, db.ErrNotFound) {
		t.Errorf("no such event: %v", err)
	}
}
