package db_test

import (
	"context"
	"reflect"
	"testing"

	"agentgw/db"
)

func TestProcessGroups(t *testing.T) {
	ctx := context.Background()
	s, _ := newStore(t)
	a := db.ProcessGroup{PGID: 100, BootID: "boot-1", StartTicks: 5000, OwnerPID: 42, OwnerStartTicks: 4000}
	b := db.ProcessGroup{PGID: 200, BootID: "boot-1", StartTicks: 6000}
	for _, g := range []db.ProcessGroup{a, b} {
		if err := s.RecordProcessGroup(ctx, g); err != nil {
			t.Fatal(err)
		}
	}
	// A later group with a reused number replaces the stale record.
	a2 := db.ProcessGroup{PGID: 100, BootID: "boot-1", StartTicks: 7000, OwnerPID: 43, OwnerStartTicks: 6500}
	if err := s.RecordProcessGroup(ctx, a2); err != nil {
		t.Fatal(err)
	}
	// Forgetting the stale identity leaves the new record alone.
	if err := s.ForgetProcessGroup(ctx, a); err != nil {
		t.Fatal(err)
	}
	got, err := s.ProcessGroups(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := []db.ProcessGroup{a2, b}; !reflect.DeepEqual(got, want) {
		t.Fatalf("ProcessGroups = %+v, want %+v", got, want)
	}
	for _, g := range []db.ProcessGroup{a2, b} {
		if err := s.ForgetProcessGroup(ctx, g); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := s.ProcessGroups(ctx); err != nil || len(got) != 0 {
		t.Fatalf("after forgetting all: %+v, %v", got, err)
	}
}
