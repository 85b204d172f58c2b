package db_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"agentgw/db"
)

func TestRemoveVersionAndRestore(t *testing.T) {
	ctx := context.Background()
	s, clk := newStore(t)
	const jid = "weather@agents.example"
	v1 := manifest(jid, "1", "weather", "Weather")
	v2 := manifest(jid, "2", "weather", "Weather 2")
	mustRegister(t, s, v1)
	mustRegister(t, s, v2)
	mustActivate(t, s, jid, "2")

	// The active version is refused; unknown ones are not found.
	if err := s.RemoveVersion(ctx, jid, "2"); !errors.Is(err, db.ErrActive) {
		t.Fatalf("RemoveVersion(active) = %v, want ErrActive", err)
	}
	if err := s.RemoveVersion(ctx, jid, "9"); !errors.Is(err, db.ErrNotFound) {
		t.Errorf("RemoveVersion(unknown version) = %v, want ErrNotFound", err)
	}
	if err := s.RemoveVersion(ctx, "nobody@agents.example", "1"); !errors.Is(err, db.ErrNotFound) {
		t.Errorf("RemoveVersion(unknown endpoint) = %v, want ErrNotFound", err)
	}

	clk.Advance(time.Minute)
	if err := s.RemoveVersion(ctx, jid, "1"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Version(ctx, jid, "1"); !errors.Is(err, db.ErrNotFound) {
		t.Errorf("Version after removal: %v, want ErrNotFound", err)
	}
	if err := s.Activate(ctx, jid, "1", nil); !errors.Is(err, db.ErrNotFound) {
		t.Errorf("Activate removed version: %v, want ErrNotFound", err)
	}
	ts, err := s.Tombstones(ctx, jid)
	if err != nil {
		t.Fatal(err)
	}
	if len(ts) != 1 || ts[0].Version != "1" || ts[0].Hash != v1.Hash || !ts[0].RemovedAt.Equal(epoch.Add(time.Minute)) {
		t.Fatalf("tombstones = %+v", ts)
	}

	// Different content under the removed version: a conflict, forever.
	other := manifest(jid, "1", "weather", "Something else")
	if _, err := s.RegisterVersion(ctx, other, db.OriginAdmin); !errors.Is(err, db.ErrConflict) || !errors.Is(err, db.ErrRemoved) ||
		!strings.Contains(err.Error(), "was removed") {
		t.Fatalf("register other content under tombstone = %v, want ErrConflict", err)
	}
	// Identical content restores it.
	clk.Advance(time.Minute)
	created, err := s.RegisterVersion(ctx, v1, db.OriginAdmin)
	if err != nil || !created {
		t.Fatalf("restore = %v, %v; want true, nil", created, err)
	}
	got, err := s.Version(ctx, jid, "1")
	if err != nil || string(got.Canonical) != string(v1.Canonical) || !got.CreatedAt.Equal(epoch.Add(2*time.Minute)) {
		t.Fatalf("restored version = %+v, %v", got, err)
	}
	// The tombstone stays after the restore: a second removal keeps it, and
	// other content is still refused while the version is live again.
	if _, err := s.RegisterVersion(ctx, other, db.OriginAdmin); !errors.Is(err, db.ErrConflict) {
		t.Errorf("register other content over a restored version = %v, want ErrConflict", err)
	}
	clk.Advance(time.Minute)
	if err := s.RemoveVersion(ctx, jid, "1"); err != nil {
		t.Fatal(err)
	}
	ts, _ = s.Tombstones(ctx, jid)
	if len(ts) != 1 || ts[0].Hash != v1.Hash || !ts[0].RemovedAt.Equal(epoch.Add(3*time.Minute)) {
		t.Errorf("tombstones after second removal = %+v", ts)
	}
	if _, err := s.RegisterVersion(ctx, other, db.OriginAdmin); !errors.Is(err, db.ErrConflict) {
		t.Errorf("register other content after second removal = %v, want ErrConflict", err)
	}

	// The bulk import path honours tombstones too.
	if err := s.ImportVersions(ctx, []db.Version{other}, false); !errors.Is(err, db.ErrConflict) {
		t.Errorf("ImportVersions over a tombstone = %v, want ErrConflict", err)
	}
	st, err := s.Status(ctx, jid)
	if err != nil || st.Active != "2" || len(st.Versions) != 1 {
		t.Errorf("status = %+v, %v", st, err)
	}
}

func TestRetention(t *testing.T) {
	ctx := context.Background()
	s, clk := newStore(t)
	const jid = "weather@agents.example"
	mustRegister(t, s, manifest(jid, "1", "weather", ""))
	mustRegister(t, s, manifest(jid, "2", "weather", ""))
	mustActivate(t, s, jid, "2")

	if err := s.RetainVersion(ctx, jid, "7", "task:a", epoch.Add(time.Hour)); !errors.Is(err, db.ErrNotFound) {
		t.Errorf("RetainVersion(unknown) = %v, want ErrNotFound", err)
	}
	if err := s.RetainVersion(ctx, jid, "1", "", epoch.Add(time.Hour)); err == nil {
		t.Error("RetainVersion with an empty holder succeeded")
	}
	if err := s.RetainVersion(ctx, jid, "1", "task:a", epoch.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if ok, err := s.VersionRetained(ctx, jid, "1"); err != nil || !ok {
		t.Fatalf("VersionRetained = %v, %v; want true", ok, err)
	}
	reg, err := s.RegistrationStatus(ctx, jid)
	if err != nil {
		t.Fatal(err)
	}
	if reg.Removable("1") || reg.Removable("2") || reg.Removable("3") || !reg.Retained["1"] {
		t.Errorf("registration = %+v: 1 is retained, 2 active, 3 unknown", reg)
	}
	if err := s.RemoveVersion(ctx, jid, "1"); !errors.Is(err, db.ErrRetained) {
		t.Fatalf("RemoveVersion(retained) = %v, want ErrRetained", err)
	}
	if err := s.RemoveEndpoint(ctx, jid); !errors.Is(err, db.ErrRetained) {
		t.Fatalf("RemoveEndpoint(retained) = %v, want ErrRetained", err)
	}
	// Nothing of the refused endpoint removal happened.
	if st, err := s.Status(ctx, jid); err != nil || st.Active != "2" || len(st.Versions) != 2 {
		t.Errorf("status after refused removal = %+v, %v", st, err)
	}
	// The database itself refuses to drop a version a hold names.
	if _, err := db.WriterPool(s).ExecContext(ctx, "DELETE FROM manifest_version WHERE version = '1'"); !isForeignKeyError(err) {
		t.Errorf("raw delete of a retained version: %v, want a foreign key error", err)
	}

	// Extending the hold, a second holder, and release.
	if err := s.RetainVersion(ctx, jid, "1", "task:a", epoch.Add(2*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := s.RetainVersion(ctx, jid, "1", "task:b", epoch.Add(30*time.Minute)); err != nil {
		t.Fatal(err)
	}
	if err := s.ReleaseVersion(ctx, jid, "1", "task:a"); err != nil {
		t.Fatal(err)
	}
	if err := s.ReleaseVersion(ctx, jid, "1", "task:nobody"); err != nil {
		t.Errorf("releasing a missing hold: %v", err)
	}
	if ok, _ := s.VersionRetained(ctx, jid, "1"); !ok {
		t.Error("task:b's hold should still be in force")
	}
	// A hold lapses at its instant, exactly.
	clk.Advance(30 * time.Minute)
	if ok, _ := s.VersionRetained(ctx, jid, "1"); ok {
		t.Error("a hold is still in force at retain_until")
	}
	reg, _ = s.RegistrationStatus(ctx, jid)
	if !reg.Removable("1") {
		t.Errorf("registration after the hold lapsed = %+v", reg)
	}
	// Removal prunes the lapsed hold, which the foreign key needs.
	if err := s.RemoveVersion(ctx, jid, "1"); err != nil {
		t.Fatalf("RemoveVersion after the hold lapsed: %v", err)
	}
}

func TestRemoveEndpoint(t *testing.T) {
	ctx := context.Background()
	s, _ := newStore(t)
	const jid = "weather@agents.example"
	v1 := manifest(jid, "1", "weather", "")
	mustRegister(t, s, v1)
	mustRegister(t, s, manifest(jid, "2", "weather", ""))
	mustRegister(t, s, manifest("other@agents.example", "1", "other", ""))
	mustActivate(t, s, jid, "2")
	mustActivate(t, s, "other@agents.example", "1")
	if _, err := s.Subscribe(ctx, jid, "alice@example.com"); err != nil {
		t.Fatal(err)
	}
	if err := s.RetainVersion(ctx, jid, "1", "task:old", epoch); err != nil { // already lapsed
		t.Fatal(err)
	}
	if n := activeCount(t, s); n != 2 {
		t.Fatalf("count = %d", n)
	}

	if err := s.RemoveEndpoint(ctx, "nobody@agents.example"); !errors.Is(err, db.ErrNotFound) {
		t.Errorf("RemoveEndpoint(unknown) = %v, want ErrNotFound", err)
	}
	if err := s.RemoveEndpoint(ctx, jid); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Status(ctx, jid); !errors.Is(err, db.ErrNotFound) {
		t.Errorf("Status after removal: %v", err)
	}
	if n := activeCount(t, s); n != 1 {
		t.Errorf("count after removing an active endpoint = %d, want 1", n)
	}
	if subs, _ := s.Subscribers(ctx, jid); len(subs) != 0 {
		t.Errorf("subscribers survived: %v", subs)
	}
	ts, err := s.Tombstones(ctx, jid)
	if err != nil || len(ts) != 2 || ts[0].Version != "1" || ts[1].Version != "2" {
		t.Fatalf("tombstones = %+v, %v", ts, err)
	}
	// Tombstones outlive the endpoint: identical content restores, other
	// content conflicts.
	if _, err := s.RegisterVersion(ctx, manifest(jid, "1", "weather", "changed"), db.OriginAdmin); !errors.Is(err, db.ErrConflict) {
		t.Errorf("register other content after endpoint removal = %v", err)
	}
	if created, err := s.RegisterVersion(ctx, v1, db.OriginSelf); err != nil || !created {
		t.Errorf("restore after endpoint removal = %v, %v", created, err)
	}
	if st, err := s.Status(ctx, jid); err != nil || st.Origin != db.OriginSelf || st.Active != "" {
		t.Errorf("restored endpoint = %+v, %v", st, err)
	}
}
