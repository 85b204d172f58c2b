package db_test

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"agentgw/db"
)

func TestRegisterVersion(t *testing.T) {
	ctx := context.Background()
	s, clk := newStore(t)
	v := manifest("weather@agents.example", "1.4.0", "weather", "Weather")

	created, err := s.RegisterVersion(ctx, v, db.OriginSelf)
	if err != nil || !created {
		t.Fatalf("first RegisterVersion = %v, %v; want true, nil", created, err)
	}
	clk.Advance(time.Hour)
	created, err = s.RegisterVersion(ctx, v, db.OriginAdmin)
	if err != nil || created {
		t.Fatalf("identical RegisterVersion = %v, %v; want false, nil", created, err)
	}

	changed := manifest("weather@agents.example", "1.4.0", "weather", "Weather v2")
	created, err = s.RegisterVersion(ctx, changed, db.OriginSelf)
	if !errors.Is(err, db.ErrConflict) || created {
		t.Fatalf("conflicting RegisterVersion = %v, %v; want false, ErrConflict", created, err)
	}
	const wantMsg = "db: version 1.4.0 of weather@agents.example is registered with different content: conflict"
	if err.Error() != wantMsg {
		t.Errorf("conflict error = %q, want %q", err, wantMsg)
	}

	got, err := s.Version(ctx, v.JID, v.Version)
	if err != nil {
		t.Fatal(err)
	}
	want := v
	want.CreatedAt = epoch // the first registration's instant, not the second's
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Version = %+v\nwant      %+v", got, want)
	}

	// The endpoint keeps the origin it was created with.
	st, err := s.Status(ctx, v.JID)
	if err != nil {
		t.Fatal(err)
	}
	if st.Origin != db.OriginSelf || !st.CreatedAt.Equal(epoch) {
		t.Errorf("status = %+v, want origin self created at %v", st, epoch)
	}
}

func TestRegisterVersionRejectsInvalid(t *testing.T) {
	ctx := context.Background()
	s, _ := newStore(t)
	good := manifest("a@agents.example", "1", "a", "")
	for name, tc := range map[string]struct {
		edit   func(*db.Version)
		origin string
	}{
		"empty jid":      {func(v *db.Version) { v.JID = "" }, db.OriginAdmin},
		"invalid utf-8":  {func(v *db.Version) { v.JID = "a\xff@agents.example" }, db.OriginAdmin},
		"empty version":  {func(v *db.Version) { v.Version = "" }, db.OriginAdmin},
		"no canonical":   {func(v *db.Version) { v.Canonical = nil }, db.OriginAdmin},
		"unknown origin": {func(*db.Version) {}, "martian"},
		"empty origin":   {func(*db.Version) {}, ""},
	} {
		v := good
		tc.edit(&v)
		if _, err := s.RegisterVersion(ctx, v, tc.origin); err == nil {
			t.Errorf("%s: RegisterVersion succeeded", name)
		}
	}
	if eps, err := s.Endpoints(ctx); err != nil || len(eps) != 0 {
		t.Errorf("Endpoints = %v, %v; want none", eps, err)
	}
}

func TestActivate(t *testing.T) {
	ctx := context.Background()
	s, clk := newStore(t)
	v1 := manifest("weather@agents.example", "1.0.0", "weather", "")
	v2 := manifest("weather@agents.example", "2.0.0", "weather", "Weather Station")
	mustRegister(t, s, v1)
	mustRegister(t, s, v2)

	if _, err := s.ActiveVersion(ctx, v1.JID); !errors.Is(err, db.ErrNotFound) {
		t.Errorf("ActiveVersion before activation: %v, want ErrNotFound", err)
	}
	if err := s.Activate(ctx, v1.JID, "1.0.0", &v2.Hash); !errors.Is(err, db.ErrHashMismatch) {
		t.Errorf("Activate with another version's hash: %v, want ErrHashMismatch", err)
	}
	if err := s.Activate(ctx, v1.JID, "3.0.0", nil); !errors.Is(err, db.ErrNotFound) {
		t.Errorf("Activate unknown version: %v, want ErrNotFound", err)
	}
	if err := s.Activate(ctx, "nobody@agents.example", "1.0.0", nil); !errors.Is(err, db.ErrNotFound) {
		t.Errorf("Activate unknown endpoint: %v, want ErrNotFound", err)
	}
	if n := activeCount(t, s); n != 0 {
		t.Errorf("count after failed activations = %d, want 0", n)
	}

	clk.Advance(time.Minute)
	if err := s.Activate(ctx, v1.JID, "1.0.0", &v1.Hash); err != nil {
		t.Fatalf("Activate with the right hash: %v", err)
	}
	got, err := s.ActiveVersion(ctx, v1.JID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Version != "1.0.0" || got.Hash != v1.Hash {
		t.Errorf("ActiveVersion = %s %x, want 1.0.0 %x", got.Version, got.Hash, v1.Hash)
	}
	// No title: the directory shows the name.
	checkDirectory(t, s, db.Scope{All: true}, db.Page{Max: 10}, 1, "weather@agents.example=weather")

	if err := s.Activate(ctx, v1.JID, "2.0.0", nil); err != nil {
		t.Fatalf("Activate without a hash: %v", err)
	}
	checkDirectory(t, s, db.Scope{All: true}, db.Page{Max: 10}, 1, "weather@agents.example=Weather Station")
}

func TestDeactivate(t *testing.T) {
	ctx := context.Background()
	s, _ := newStore(t)
	v := manifest("a@agents.example", "1", "a", "")
	mustRegister(t, s, v)

	if err := s.Deactivate(ctx, "nobody@agents.example"); !errors.Is(err, db.ErrNotFound) {
		t.Errorf("Deactivate unknown endpoint: %v, want ErrNotFound", err)
	}
	if err := s.Deactivate(ctx, v.JID); err != nil {
		t.Errorf("Deactivate inactive endpoint: %v", err)
	}
	mustActivate(t, s, v.JID, "1")
	if err := s.Deactivate(ctx, v.JID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ActiveVersion(ctx, v.JID); !errors.Is(err, db.ErrNotFound) {
		t.Errorf("ActiveVersion after Deactivate: %v, want ErrNotFound", err)
	}
	if st, _ := s.Status(ctx, v.JID); st.Active != "" || len(st.Versions) != 1 {
		t.Errorf("status after Deactivate = %+v", st)
	}
	if n := activeCount(t, s); n != 0 {
		t.Errorf("count = %d, want 0", n)
	}
}

func TestActiveCounter(t *testing.T) {
	ctx := context.Background()
	s, _ := newStore(t)
	for _, jid := range []string{"a@x", "b@x", "c@x"} {
		mustRegister(t, s, manifest(jid, "1", jid, ""))
		mustRegister(t, s, manifest(jid, "2", jid, ""))
	}
	steps := []struct {
		name string
		do   func() error
		want int
	}{
		{"activate a", func() error { return s.Activate(ctx, "a@x", "1", nil) }, 1},
		{"activate a again", func() error { return s.Activate(ctx, "a@x", "1", nil) }, 1},
		{"switch a to 2", func() error { return s.Activate(ctx, "a@x", "2", nil) }, 1},
		{"switch a back to 1", func() error { return s.Activate(ctx, "a@x", "1", nil) }, 1},
		{"activate b", func() error { return s.Activate(ctx, "b@x", "2", nil) }, 2},
		{"failed activate c", func() error { s.Activate(ctx, "c@x", "9", nil); return nil }, 2},
		{"deactivate a", func() error { return s.Deactivate(ctx, "a@x") }, 1},
		{"deactivate a again", func() error { return s.Deactivate(ctx, "a@x") }, 1},
		{"deactivate c (inactive)", func() error { return s.Deactivate(ctx, "c@x") }, 1},
		{"activate c", func() error { return s.Activate(ctx, "c@x", "1", nil) }, 2},
		{"import activates a", func() error {
			return s.ImportVersions(ctx, []db.Version{manifest("a@x", "2", "a@x", "")}, true)
		}, 3},
	}
	for _, step := range steps {
		if err := step.do(); err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		if got := activeCount(t, s); got != step.want {
			t.Errorf("after %s: counter = %d, want %d", step.name, got, step.want)
		}
		var rows int
		if err := db.ReaderPool(s).QueryRow("SELECT count(*) FROM active_endpoint").Scan(&rows); err != nil {
			t.Fatal(err)
		}
		if rows != step.want {
			t.Errorf("after %s: %d active rows, want %d", step.name, rows, step.want)
		}
	}
}

func TestStatusAndEndpoints(t *testing.T) {
	ctx := context.Background()
	s, clk := newStore(t)
	if _, err := s.Status(ctx, "nobody@x"); !errors.Is(err, db.ErrNotFound) {
		t.Errorf("Status unknown: %v, want ErrNotFound", err)
	}

	// Versions are ordered by bytes, not by semantic version.
	b9 := manifest("b@x", "1.9", "b", "")
	b10 := manifest("b@x", "1.10", "b", "")
	a1 := manifest("a@x", "1", "a", "")
	mustRegister(t, s, b9)
	clk.Advance(time.Second)
	mustRegister(t, s, b10)
	if _, err := s.RegisterVersion(ctx, a1, db.OriginMCP); err != nil {
		t.Fatal(err)
	}
	mustActivate(t, s, "b@x", "1.9")

	later := epoch.Add(time.Second)
	wantB := db.EndpointStatus{
		JID: "b@x", Origin: db.OriginAdmin, Active: "1.9", CreatedAt: epoch,
		Versions: []db.VersionInfo{
			{Version: "1.10", Hash: b10.Hash, CreatedAt: later},
			{Version: "1.9", Hash: b9.Hash, CreatedAt: epoch},
		},
	}
	wantA := db.EndpointStatus{
		JID: "a@x", Origin: db.OriginMCP, CreatedAt: later,
		Versions: []db.VersionInfo{{Version: "1", Hash: a1.Hash, CreatedAt: later}},
	}
	if got, err := s.Status(ctx, "b@x"); err != nil || !reflect.DeepEqual(got, wantB) {
		t.Errorf("Status(b) = %+v, %v\nwant %+v", got, err, wantB)
	}
	got, err := s.Endpoints(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := []db.EndpointStatus{wantA, wantB}; !reflect.DeepEqual(got, want) {
		t.Errorf("Endpoints = %+v\nwant %+v", got, want)
	}
}

func TestImportVersions(t *testing.T) {
	ctx := context.Background()
	s, _ := newStore(t)
	mustRegister(t, s, manifest("a@x", "1", "a", ""))

	conflicting := []db.Version{
		manifest("b@x", "1", "b", ""),
		manifest("a@x", "1", "a", "another title"),
	}
	if err := s.ImportVersions(ctx, conflicting, true); !errors.Is(err, db.ErrConflict) {
		t.Fatalf("ImportVersions with a conflict: %v, want ErrConflict", err)
	}
	if _, err := s.Status(ctx, "b@x"); !errors.Is(err, db.ErrNotFound) {
		t.Errorf("a failed import left b@x behind: %v", err)
	}

	kept := epoch.Add(-24 * time.Hour)
	old := manifest("c@x", "0.9", "c", "")
	old.CreatedAt = kept
	vs := []db.Version{
		manifest("a@x", "1", "a", ""), // already stored: skipped
		manifest("b@x", "1", "b", ""),
		manifest("b@x", "2", "b", "Bee"),
		old,
	}
	if err := s.ImportVersions(ctx, vs, true); err != nil {
		t.Fatal(err)
	}
	checkDirectory(t, s, db.Scope{All: true}, db.Page{Max: 10}, 3, "a@x=a", "b@x=Bee", "c@x=c")
	if v, err := s.Version(ctx, "c@x", "0.9"); err != nil || !v.CreatedAt.Equal(kept) {
		t.Errorf("imported CreatedAt = %v, %v; want %v", v.CreatedAt, err, kept)
	}
	if st, _ := s.Status(ctx, "b@x"); st.Origin != db.OriginAdmin {
		t.Errorf("imported origin = %q, want admin", st.Origin)
	}
}
