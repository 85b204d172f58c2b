package db_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"agentgw/db"
)

// TestMemSearchMatchesSQL: the in-memory index answers every search
// exactly as the SQL path does, items, counts and estimates included, for
// random queries, pages and scopes over a directory large enough for the
// sampled count (more than CountExactLimit postings of one trigram).
func TestMemSearchMatchesSQL(t *testing.T) {
	ctx := context.Background()
	path := newLocation(t)
	mem, _ := openAt(t, path)
	sql, _ := openAt(t, path)
	db.SQLSearchOnly(sql)

	rnd := rand.New(rand.NewPCG(1, 2))
	words := []string{"agent", "météo", "Weather", "CALENDAR", "straße", "ab", "abc", "x", "zz", "東京", "agenda", "gent"}
	var vs []db.Version
	var jids []string
	for i := range 1400 {
		name := fmt.Sprintf("%s-%d", words[rnd.IntN(len(words))], i%37)
		title := words[rnd.IntN(len(words))] + " " + words[rnd.IntN(len(words))] + fmt.Sprintf(" %03d", i)
		jid := fmt.Sprintf("e%05d-%s@agents.example", rnd.IntN(100000), []string{"a", "b", "c"}[i%3])
		if i%2 == 0 {
			title = "Agent " + title // many share "age", "gen", "ent"
		}
		vs = append(vs, manifest(jid, "1.0", name, title))
		jids = append(jids, jid)
	}
	if err := mem.ImportVersions(ctx, dedupe(vs), true); err != nil {
		t.Fatal(err)
	}
	queries := []string{"agent", "AGENT", "a", "ab", "abc", "gen", "ent 0", "météo", "METEO", "strasse", "東", "東京",
		"weather 1", "zz", "nothing-like-this", "x", "-1", "e 00", "agent agenda", "calendar"}
	for i := 0; i < 400; i++ {
		q := queries[rnd.IntN(len(queries))]
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
				n := rnd.IntN(40)
				p.Index = &n
			}
		}
		sc := db.Scope{All: true}
		if rnd.IntN(3) == 0 {
			sc = db.Scope{JIDs: append(sampleJIDs(rnd, jids, 60), "nobody@agents.example")}
		}
		want, err := sql.Search(ctx, sc, q, p)
		if err != nil {
			t.Fatal(err)
		}
		got, err := mem.Search(ctx, sc, q, p)
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
			t.Fatalf("query %q page %+v all=%v:\nmemory %+v\nSQL    %+v", q, p, sc.All, got, want)
		}
	}
	// The sampled count was exercised.
	if page, err := mem.Search(ctx, db.Scope{All: true}, "agent", db.Page{Max: 1}); err != nil || !page.CountEstimated {
		t.Errorf("no estimated count to compare: %+v %v", page, err)
	}
}

func dedupe(vs []db.Version) []db.Version {
	seen := map[string]bool{}
	out := vs[:0]
	for _, v := range vs {
		if !seen[v.JID] {
			seen[v.JID] = true
			out = append(out, v)
		}
	}
	return out
}

func sampleJIDs(rnd *rand.Rand, jids []string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = jids[rnd.IntN(len(jids))]
	}
	return out
}

// TestMemSearchFollowsChanges: a change made through the same Store is
// in the very next search; one made through another Store on the same
// file (as the CLI does while serve runs) within memRecheck.
func TestMemSearchFollowsChanges(t *testing.T) {
	ctx := context.Background()
	path := newLocation(t)
	s, _ := openAt(t, path)
	cli, _ := openAt(t, path)
	// The same Store: at once.
	mustRegister(t, s, manifest("weather@agents.example", "1.0", "weather", "Weather Station"))
	mustActivate(t, s, "weather@agents.example", "1.0")
	if got, n := search(t, s, db.Scope{All: true}, "station", db.Page{Max: 10}); n != 1 || len(got) != 1 {
		t.Fatalf("after activation: %v %d", got, n)
	}
	mustRegister(t, s, manifest("weather@agents.example", "2.0", "weather", "Weather Service"))
	mustActivate(t, s, "weather@agents.example", "2.0")
	if got, n := search(t, s, db.Scope{All: true}, "station", db.Page{Max: 10}); n != 0 || len(got) != 0 {
		t.Errorf("after switching versions, the old title still matches: %v %d", got, n)
	}
	if got, n := search(t, s, db.Scope{All: true}, "service", db.Page{Max: 10}); n != 1 || len(got) != 1 {
		t.Errorf("after switching versions, the new title does not match: %v %d", got, n)
	}
	// Another Store (another process): within memRecheck, 250 ms.
	if err := cli.Deactivate(ctx, "weather@agents.example"); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for {
		got, n := search(t, s, db.Scope{All: true}, "weather", db.Page{Max: 10})
		if n == 0 && len(got) == 0 {
			break
		}
		if time.Since(start) > 2*time.Second {
			t.Fatalf("a deactivation by another process is still searched after %v", time.Since(start))
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Logf("another process's deactivation searched after %v", time.Since(start).Round(time.Millisecond))
}

// TestMemSearchConcurrent: searches running while endpoints are activated
// and deactivated see a consistent index (run with -race); once the writes
// stop, every search sees the final directory.
func TestMemSearchConcurrent(t *testing.T) {
	ctx := context.Background()
	s, _ := newStore(t)
	for i := range 20 {
		mustRegister(t, s, manifest(fmt.Sprintf("a%02d@agents.example", i), "1.0", fmt.Sprintf("a%02d", i), "Concurrent Agent"))
	}
	done := make(chan struct{})
	errs := make(chan error, 4)
	for range 4 {
		go func() {
			for {
				select {
				case <-done:
					errs <- nil
					return
				default:
				}
				page, err := s.Search(ctx, db.Scope{All: true}, "concurrent", db.Page{Max: 100})
				if err != nil || page.Count != len(page.Items) {
					errs <- fmt.Errorf("search: %+v %v", page, err)
					return
				}
			}
		}()
	}
	for round := range 5 {
		for i := range 20 {
			j := fmt.Sprintf("a%02d@agents.example", i)
			if (i+round)%2 == 0 {
				mustActivate(t, s, j, "1.0")
			} else if err := s.Deactivate(ctx, j); err != nil && !errors.Is(err, db.ErrNotFound) {
				t.Fatal(err)
			}
		}
	}
	close(done)
	for range 4 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	page, err := s.Search(ctx, db.Scope{All: true}, "concurrent", db.Page{Max: 100})
	if err != nil || page.Count != 10 || len(page.Items) != 10 {
		t.Errorf("final search: %d items, count %d, %v", len(page.Items), page.Count, err)
	}
}
