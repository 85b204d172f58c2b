package db_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"agentgw/db"
)

// TestSnapshotMatchesSQL: the directory pages and endpoint summaries
// answered from memory are exactly those of the SQL path, for random
// pages and scopes, before and after changes (a version switch, a
// deactivation, new endpoints).
func TestSnapshotMatchesSQL(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "agentgw.db")
	mem, _ := openAt(t, path)
	sql, _ := openAt(t, path)
	db.SQLSearchOnly(sql)

	rnd := rand.New(rand.NewPCG(3, 4))
	var vs []db.Version
	var jids []string
	for i := range 300 {
		jid := fmt.Sprintf("e%05d@agents.example", rnd.IntN(100000))
		vs = append(vs, manifest(jid, "1.0", fmt.Sprintf("n%d", i), fmt.Sprintf("Title %d", i)))
		jids = append(jids, jid)
	}
	vs = dedupe(vs)
	if err := mem.ImportVersions(ctx, vs, true); err != nil {
		t.Fatal(err)
	}
	compare := func(round int) {
		t.Helper()
		probe := append(sampleJIDs(rnd, jids, 40), "nobody@agents.example", "")
		for _, j := range probe {
			want, werr := sql.ActiveSummary(ctx, j)
			got, gerr := mem.ActiveSummary(ctx, j)
			if !errors.Is(gerr, db.ErrNotFound) != !errors.Is(werr, db.ErrNotFound) || !reflect.DeepEqual(got, want) {
				t.Fatalf("round %d: summary of %q:\nmemory %+v %v\nSQL    %+v %v", round, j, got, gerr, want, werr)
			}
		}
		for range 200 {
			p := db.Page{Max: []int{0, 1, 5, 50, 100}[rnd.IntN(5)]}
			pivot := jids[rnd.IntN(len(jids))]
			switch rnd.IntN(4) {
			case 1:
				p.After = &pivot
			case 2:
				p.Before = &pivot
			case 3:
				if rnd.IntN(2) == 0 {
					empty := ""
					p.Before = &empty
				} else {
					n := rnd.IntN(400)
					p.Index = &n
				}
			}
			if rnd.IntN(4) == 0 && p.Before == nil {
				after := jids[rnd.IntN(len(jids))]
				p.After = &after
			}
			sc := db.Scope{All: true}
			switch rnd.IntN(4) {
			case 0:
				sc = db.Scope{JIDs: append(sampleJIDs(rnd, jids, 60), "nobody@agents.example", "")}
			case 1:
				sc = db.Scope{}
			}
			want, err := sql.Directory(ctx, sc, p)
			if err != nil {
				t.Fatal(err)
			}
			got, err := mem.Directory(ctx, sc, p)
			if err != nil {
				t.Fatal(err)
			}
			if len(want.Items) == 0 {
				want.Items = nil
			}
			if len(got.Items) == 0 {
				got.Items = nil
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("round %d: page %+v all=%v:\nmemory %+v\nSQL    %+v", round, p, sc.All, got, want)
			}
		}
	}
	compare(0)
	// A version switch, a deactivation and a new endpoint, through the
	// same Store: the next read sees them.
	v2 := manifest(vs[0].JID, "2.0", "renamed", "Renamed")
	mustRegister(t, mem, v2)
	mustActivate(t, mem, v2.JID, "2.0")
	if err := mem.Deactivate(ctx, vs[1].JID); err != nil {
		t.Fatal(err)
	}
	extra := manifest("zz-new@agents.example", "1.0", "new", "New")
	mustRegister(t, mem, extra)
	mustActivate(t, mem, extra.JID, "1.0")
	jids = append(jids, extra.JID)
	if got, err := mem.ActiveSummary(ctx, v2.JID); err != nil || got.Version != "2.0" || got.Title != "Renamed" {
		t.Fatalf("after the switch: %+v %v", got, err)
	}
	compare(1)
}

// TestMemoryOnly: under a MemoryOnly context the store answers from a
// current in-memory index and fails with ErrWouldBlock wherever it would
// have to ask the database: before the index is built, after a write of
// its own, and for anything that is not a hot read.
func TestMemoryOnly(t *testing.T) {
	ctx := context.Background()
	s, _ := newStore(t)
	// Trust the index by its changes alone: the 250 ms recheck would let
	// a pause of a loaded machine between two reads send a memory-only
	// read to the database, which is not what this test is about.
	s.SetRecheck(time.Hour)
	v := manifest("weather@agents.example", "1.0", "weather", "Weather")
	mustRegister(t, s, v)
	mustActivate(t, s, v.JID, "1.0")
	mo := db.MemoryOnly(ctx)

	if _, err := s.ActiveSummary(mo, v.JID); !errors.Is(err, db.ErrWouldBlock) {
		t.Fatalf("before any read: %v, want ErrWouldBlock", err)
	}
	if _, err := s.ActiveSummary(ctx, v.JID); err != nil {
		t.Fatal(err)
	}
	got, err := s.ActiveSummary(mo, v.JID)
	if err != nil || got.Hash != v.Hash {
		t.Fatalf("from memory: %+v %v", got, err)
	}
	if _, err := s.ActiveSummary(mo, "nobody@agents.example"); !errors.Is(err, db.ErrNotFound) {
		t.Fatalf("missing from memory: %v, want ErrNotFound", err)
	}
	if page, err := s.Directory(mo, db.Scope{All: true}, db.Page{Max: 10}); err != nil || page.Count != 1 {
		t.Fatalf("directory from memory: %+v %v", page, err)
	}
	if _, err := s.Search(mo, db.Scope{All: true}, "weath", db.Page{Max: 10}); err != nil {
		t.Fatalf("search from memory: %v", err)
	}
	if _, err := s.ActiveVersion(mo, v.JID); !errors.Is(err, db.ErrWouldBlock) {
		t.Fatalf("canonical bytes: %v, want ErrWouldBlock", err)
	}
	if err := s.Deactivate(mo, v.JID); !errors.Is(err, db.ErrWouldBlock) {
		t.Fatalf("a write: %v, want ErrWouldBlock", err)
	}
	if err := s.Deactivate(ctx, v.JID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ActiveSummary(mo, v.JID); !errors.Is(err, db.ErrWouldBlock) {
		t.Fatalf("after a write: %v, want ErrWouldBlock", err)
	}
	if _, err := s.ActiveSummary(ctx, v.JID); !errors.Is(err, db.ErrNotFound) {
		t.Fatalf("deactivated: %v, want ErrNotFound", err)
	}
}

// TestMemoryView: the View stays while nothing the hot reads answer from
// changes, moves
// with a change to the endpoints, and under MemoryOnly is not given until
// the store has been asked after its own write; a store whose hot reads
// ask SQLite has none.
func TestMemoryView(t *testing.T) {
	ctx := context.Background()
	mem := db.MemoryOnly(ctx)
	path := filepath.Join(t.TempDir(), "agentgw.db")
	s, _ := openAt(t, path)
	mustRegister(t, s, manifest("a@agents.example", "1.0", "a", "A"))
	mustActivate(t, s, "a@agents.example", "1.0")
	if _, err := s.MemoryView(mem); !errors.Is(err, db.ErrWouldBlock) {
		t.Fatalf("right after a write, under MemoryOnly: %v", err)
	}
	v1, err := s.MemoryView(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if v, err := s.MemoryView(mem); err != nil || v != v1 {
		t.Fatalf("unchanged: %v, same %v", err, v == v1)
	}
	mustRegister(t, s, manifest("b@agents.example", "1.0", "b", "B"))
	mustActivate(t, s, "b@agents.example", "1.0")
	v2, err := s.MemoryView(ctx)
	if err != nil || v2 == v1 {
		t.Fatalf("after a new endpoint: %v, moved %v", err, v2 != v1)
	}
	if err := s.Deactivate(ctx, "a@agents.example"); err != nil {
		t.Fatal(err)
	}
	if v3, err := s.MemoryView(ctx); err != nil || v3 == v2 {
		t.Fatalf("after a deactivation: %v, moved %v", err, v3 != v2)
	}
	sql, _ := openAt(t, path)
	db.SQLSearchOnly(sql)
	if _, err := sql.MemoryView(ctx); !errors.Is(err, db.ErrWouldBlock) {
		t.Fatalf("SQL only: %v", err)
	}
}
