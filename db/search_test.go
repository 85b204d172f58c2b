package db_test

import (
	"context"
	"database/sql"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"agentgw/db"
)

func TestSearchFold(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"Météo Agent", "météo agent"},
		{"MÉTÉO", "météo"},
		{"me\u0301te\u0301o", "météo"},                  // decomposed accents compose
		{"ＷＥＡＴＨＥＲ", "weather"},                          // full-width letters
		{"Straße", "strasse"},                           // full case folding
		{"ﬁle", "file"},                                 // ligature
		{"  Weather \t\n Station  ", "weather station"}, // white space
		{"Wea\u00adther", "weather"},                    // soft hyphen dropped
		{"a\x1fb", "a b"},                               // controls are spaces
		{"ΣΊΣΥΦΟΣ", "σίσυφοσ"},                          // final sigma folds
		{"ᏣᎳᎩ", "ᏣᎳᎩ"}, {"ꮳꮃꭹ", "ᏣᎳᎩ"},                  // Cherokee folds to capitals
		{"", ""},
		{" \t ", ""},
	} {
		if got := db.SearchFold(tc.in); got != tc.want {
			t.Errorf("SearchFold(%q) = %q, want %q", tc.in, got, tc.want)
		}
		if got := db.SearchFold(tc.want); got != tc.want {
			t.Errorf("SearchFold is not idempotent on %q: %q", tc.want, got)
		}
	}
}

func TestSearchTextAndGrams(t *testing.T) {
	text := db.SearchText("weather@agents.example", "Weather", "Météo")
	if text != "weather\x1fmétéo" {
		t.Errorf("SearchText = %q", text)
	}
	grams := db.TextGrams("ab\x1fbé")
	want := []string{"a", "b", "ab", "é", "bé"}
	if !slices.Equal(grams, want) {
		t.Errorf("TextGrams = %q, want %q (no gram spans the separator)", grams, want)
	}
}

// searchStore has a small directory for matching tests. Display names are
// titles, or names when there is no title.
func searchStore(t *testing.T) *db.Store {
	t.Helper()
	s, _ := newStore(t)
	for _, e := range [][3]string{
		{"weather@agents.example", "weather", "Weather Station"},
		{"meteo@agents.example", "meteo", "Météo Agent"},
		{"calendar@agents.example", "calendar", ""},
		{"alpha@agents.example", "alpha", "Beta"},
		{"strasse@agents.example", "strasse", "Große Straße"},
		{"nihon@agents.example", "nihon", "日本の天気"},
		{"Zed@agents.example", "zed", "Zed"},
	} {
		mustRegister(t, s, manifest(e[0], "1", e[1], e[2]))
		mustActivate(t, s, e[0], "1")
	}
	// Registered but never active, and active then deactivated: neither
	// is searchable.
	mustRegister(t, s, manifest("ghost@agents.example", "1", "ghost", "Weather Ghost"))
	mustRegister(t, s, manifest("gone@agents.example", "1", "gone", "Weather Gone"))
	mustActivate(t, s, "gone@agents.example", "1")
	if err := s.Deactivate(context.Background(), "gone@agents.example"); err != nil {
		t.Fatal(err)
	}
	return s
}

// search runs a query and renders the page as its JIDs' localparts.
func search(t *testing.T, s *db.Store, sc db.Scope, q string, p db.Page) ([]string, int) {
	t.Helper()
	page, err := s.Search(context.Background(), sc, q, p)
	if err != nil {
		t.Fatalf("Search(%q): %v", q, err)
	}
	var locals []string
	for _, it := range page.Items {
		local, _, _ := strings.Cut(it.JID, "@")
		locals = append(locals, local)
	}
	return locals, page.Count
}

func TestSearchMatching(t *testing.T) {
	s := searchStore(t)
	all := db.Scope{All: true}
	for _, tc := range []struct {
		q    string
		want []string
	}{
		{"météo", []string{"meteo"}},
		{"MÉTÉO", []string{"meteo"}},
		{"me\u0301te\u0301o", []string{"meteo"}},
		{"WEATH", []string{"weather"}},
		{"eath", []string{"weather"}},      // a substring, not a prefix
		{"Station", []string{"weather"}},   // the title
		{"calendar", []string{"calendar"}}, // the name, no title
		{"meteo", []string{"meteo"}},       // the localpart
		{"ALPHA", []string{"alpha"}},       // localpart and name
		{"alphabeta", nil},                 // no match across fields
		{"STRASSE", []string{"strasse"}},   // ß folds to ss
		{"straße", []string{"strasse"}},
		{"ss", []string{"strasse"}}, // two characters
		{"天", []string{"nihon"}},    // one character
		{"日本の天気", []string{"nihon"}},
		{"z", []string{"Zed"}},
		{"zed", []string{"Zed"}},
		{"e", []string{"Zed", "alpha", "calendar", "meteo", "strasse", "weather"}},
		{"ghost", nil},
		{"gone", nil},
		{"agents.example", nil}, // the domain is not searched
		{"xyzzy", nil},
		{" weather  station ", []string{"weather"}},
	} {
		got, count := search(t, s, all, tc.q, db.Page{Max: 50})
		if !slices.Equal(got, tc.want) || count != len(tc.want) {
			t.Errorf("Search(%q) = %q count %d, want %q", tc.q, got, count, tc.want)
		}
	}
}

func TestSearchEmptyQueryIsTheDirectory(t *testing.T) {
	s := searchStore(t)
	for _, sc := range []db.Scope{
		{All: true},
		{JIDs: []string{"meteo@agents.example", "ghost@agents.example", "weather@agents.example", "nobody@agents.example"}},
		{},
	} {
		for _, q := range []string{"", "  "} {
			for _, p := range []db.Page{{Max: 3}, {Max: 2, After: ptr("calendar@agents.example")}, {Max: 2, Before: ptr("")}, {}} {
				dir, err := s.Directory(context.Background(), sc, p)
				if err != nil {
					t.Fatal(err)
				}
				got, err := s.Search(context.Background(), sc, q, p)
				if err != nil {
					t.Fatal(err)
				}
				if got.Count != dir.Count || !slices.Equal(got.Items, dir.Items) || got.CountEstimated {
					t.Errorf("Search(%+v, %q, %s) = %+v, want the directory %+v", sc, q, pageString(p), got, dir)
				}
			}
		}
	}
}

func TestSearchScope(t *testing.T) {
	s := searchStore(t)
	// The scope names a match (weather), a non-match (calendar), an
	// inactive endpoint that would match (gone) and a nonexistent one: only
	// weather is found and counted.
	sc := db.Scope{JIDs: []string{"gone@agents.example", "weather@agents.example", "calendar@agents.example", "nobody@agents.example", "weather@agents.example"}}
	got, count := search(t, s, sc, "WEATHER", db.Page{Max: 10})
	if !slices.Equal(got, []string{"weather"}) || count != 1 {
		t.Errorf("scoped search = %q count %d", got, count)
	}
	got, count = search(t, s, sc, "a", db.Page{Max: 10})
	if !slices.Equal(got, []string{"calendar", "weather"}) || count != 2 {
		t.Errorf("scoped search for a = %q count %d", got, count)
	}
	// Deny is the zero value.
	if got, count := search(t, s, db.Scope{}, "weather", db.Page{Max: 10}); got != nil || count != 0 {
		t.Errorf("zero scope = %q count %d", got, count)
	}
	// Hidden endpoints do not change the count: the same query over a
	// scope without the hidden match counts the same as with it missing.
	_, c1 := search(t, s, db.Scope{JIDs: []string{"weather@agents.example"}}, "e", db.Page{})
	_, c2 := search(t, s, db.Scope{JIDs: []string{"weather@agents.example", "ghost@agents.example", "gone@agents.example"}}, "e", db.Page{})
	if c1 != 1 || c2 != 1 {
		t.Errorf("counts %d and %d, want 1", c1, c2)
	}
}

// pagedStore has n active endpoints eNNNN titled "Agent NNNN" and, every
// tenth, "Agent NNNN Météo".
func pagedStore(t testing.TB, n int) *db.Store {
	t.Helper()
	s, _ := newStore(t)
	vs := make([]db.Version, n)
	for i := range vs {
		title := fmt.Sprintf("Agent %04d", i)
		if i%10 == 0 {
			title += " Météo"
		}
		vs[i] = manifest(fmt.Sprintf("e%04d@agents.example", i), "1", fmt.Sprintf("e%04d", i), title)
	}
	if err := s.ImportVersions(context.Background(), vs, true); err != nil {
		t.Fatal(err)
	}
	return s
}

func TestSearchCountExtrapolated(t *testing.T) {
	// Every endpoint has both trigrams of "abcd", more of them than can be
	// counted one by one, but only every other one has "abcd" itself.
	n := 2*db.CountExactLimit + 400
	s, _ := newStore(t)
	vs := make([]db.Version, n)
	for i := range vs {
		title := "abc bcd"
		if i%2 == 0 {
			title = "abcd"
		}
		vs[i] = manifest(fmt.Sprintf("e%04d@agents.example", i), "1", fmt.Sprintf("e%04d", i), title)
	}
	if err := s.ImportVersions(context.Background(), vs, true); err != nil {
		t.Fatal(err)
	}
	page, err := s.Search(context.Background(), db.Scope{All: true}, "ABCD", db.Page{Max: 3})
	if err != nil {
		t.Fatal(err)
	}
	if !page.CountEstimated || page.Count < n/2*9/10 || page.Count > n/2*11/10 {
		t.Errorf("count %d estimated %v, want about %d", page.Count, page.CountEstimated, n/2)
	}
	if got := len(page.Items); got != 3 || page.Items[2].JID != "e0004@agents.example" {
		t.Errorf("page = %+v", page.Items)
	}
}

func eJIDs(idx ...int) []string {
	var out []string
	for _, i := range idx {
		out = append(out, fmt.Sprintf("e%04d", i))
	}
	return out
}

func TestSearchPaging(t *testing.T) {
	s := pagedStore(t, 200)
	ctx := context.Background()
	// "MÉTÉO" is counted by checking its candidates, "TÉ" (a gram) from
	// the gram counts, and a scope by probing each JID: all three must page
	// alike.
	for _, c := range []struct {
		sc db.Scope
		q  string
	}{{db.Scope{All: true}, "MÉTÉO"}, {db.Scope{All: true}, "TÉ"}, {db.Scope{JIDs: everyJID(200)}, "MÉTÉO"}} {
		sc := c.sc
		for _, tc := range []struct {
			name string
			p    db.Page
			want []string
		}{
			{"first", db.Page{Max: 3}, eJIDs(0, 10, 20)},
			{"after", db.Page{Max: 3, After: ptr("e0020@agents.example")}, eJIDs(30, 40, 50)},
			{"after positional", db.Page{Max: 2, After: ptr("e0025@agents.example")}, eJIDs(30, 40)},
			{"before", db.Page{Max: 2, Before: ptr("e0100@agents.example")}, eJIDs(80, 90)},
			{"last", db.Page{Max: 3, Before: ptr("")}, eJIDs(170, 180, 190)},
			{"index", db.Page{Max: 2, Index: ptr(5)}, eJIDs(50, 60)},
			{"after and index", db.Page{Max: 2, After: ptr("e0100@agents.example"), Index: ptr(1)}, eJIDs(120, 130)},
			{"past the end", db.Page{Max: 2, After: ptr("e0190@agents.example")}, nil},
			{"count only", db.Page{}, nil},
		} {
			got, count := search(t, s, sc, c.q, tc.p)
			if !slices.Equal(got, tc.want) || count != 20 {
				t.Errorf("all=%v %q %s: %q count %d, want %q count 20", sc.All, c.q, tc.name, got, count, tc.want)
			}
		}
	}
	// Paging forward through a two-character query visits every match
	// once, in order. ("0 " would be the one-character query "0": queries
	// are trimmed.)
	var seen []string
	p := db.Page{Max: 7}
	for {
		page, err := s.Search(ctx, db.Scope{All: true}, "ÉO", p)
		if err != nil {
			t.Fatal(err)
		}
		if page.Count != 20 {
			t.Fatalf("count = %d, want 20", page.Count)
		}
		if len(page.Items) == 0 {
			break
		}
		for _, it := range page.Items {
			seen = append(seen, it.JID)
		}
		p.After = &page.Items[len(page.Items)-1].JID
	}
	if len(seen) != 20 || !slices.IsSorted(seen) || seen[0] != "e0000@agents.example" {
		t.Errorf("paged %d: %q", len(seen), seen)
	}
}

func everyJID(n int) []string {
	var out []string
	for i := range n {
		out = append(out, fmt.Sprintf("e%04d@agents.example", i))
	}
	return out
}

func TestSearchCountEstimate(t *testing.T) {
	n := db.CountExactLimit + 200
	s := pagedStore(t, n)
	ctx := context.Background()
	// "agent" has n postings: too many to count one by one. Every sampled
	// one matches, so the estimate is exact.
	page, err := s.Search(ctx, db.Scope{All: true}, "AGENT", db.Page{Max: 5})
	if err != nil {
		t.Fatal(err)
	}
	if !page.CountEstimated || page.Count != n || len(page.Items) != 5 {
		t.Errorf("agent: count %d estimated %v, %d items; want %d estimated", page.Count, page.CountEstimated, len(page.Items), n)
	}
	// "gent 01": its rarest trigram, " 01", has few enough postings to
	// count exactly.
	truth := 0
	for i := range n {
		if strings.Contains(fmt.Sprintf("agent %04d", i), "gent 01") {
			truth++
		}
	}
	page, err = s.Search(ctx, db.Scope{All: true}, "gent 01", db.Page{Max: 5})
	if err != nil {
		t.Fatal(err)
	}
	if page.CountEstimated || page.Count != truth || truth == 0 {
		t.Errorf("gent 01: count %d estimated %v, want %d exact", page.Count, page.CountEstimated, truth)
	}
	// A scoped count is always exact.
	page, err = s.Search(ctx, db.Scope{JIDs: everyJID(n)}, "agent", db.Page{})
	if err != nil {
		t.Fatal(err)
	}
	if page.CountEstimated || page.Count != n {
		t.Errorf("scoped agent: count %d estimated %v", page.Count, page.CountEstimated)
	}
}

// checkIndex recomputes the search index from the active endpoints and
// compares it with the stored one.
func checkIndex(t *testing.T, s *db.Store) {
	t.Helper()
	r := db.ReaderPool(s)
	rows, err := r.Query(`SELECT a.jid, m.name, m.title, a.display_name FROM active_endpoint AS a
		JOIN manifest_version AS m ON m.endpoint_jid = a.jid AND m.version = a.version`)
	if err != nil {
		t.Fatal(err)
	}
	wantText := map[string]string{}
	wantGrams := map[string]bool{}
	wantCounts := map[string]int{}
	for rows.Next() {
		var jid, name, title, display string
		if err := rows.Scan(&jid, &name, &title, &display); err != nil {
			t.Fatal(err)
		}
		text := db.SearchText(jid, name, title)
		wantText[jid] = text + "|" + display
		for _, g := range db.TextGrams(text) {
			wantGrams[g+"|"+jid] = true
			wantCounts[g]++
		}
	}
	rows.Close()

	gotText := map[string]string{}
	queryMap(t, r, "SELECT jid, folded || '|' || display_name FROM search_text", func(k, v string) { gotText[k] = v })
	gotGrams := map[string]bool{}
	queryMap(t, r, "SELECT gram, jid FROM search_gram", func(k, v string) { gotGrams[k+"|"+v] = true })
	gotCounts := map[string]int{}
	queryMap(t, r, "SELECT gram, n FROM search_gram_count", func(k, v string) {
		var n int
		fmt.Sscan(v, &n)
		gotCounts[k] = n
	})
	if !maps.Equal(gotText, wantText) {
		t.Errorf("search_text = %q\nwant %q", gotText, wantText)
	}
	if !maps.Equal(gotGrams, wantGrams) {
		t.Errorf("search_gram has %d postings, want %d", len(gotGrams), len(wantGrams))
	}
	if !maps.Equal(gotCounts, wantCounts) {
		t.Errorf("search_gram_count has %d grams, want %d (zero counts must be removed)", len(gotCounts), len(wantCounts))
	}
}

func queryMap(t *testing.T, r *sql.DB, query string, f func(k, v string)) {
	t.Helper()
	rows, err := r.Query(query)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var k, v string
		if err := rows.Scan(&k, &v); err != nil {
			t.Fatal(err)
		}
		f(k, v)
	}
}

// TestSearchIndexFollowsActivation changes active_endpoint through every
// write path and checks the index after each.
func TestSearchIndexFollowsActivation(t *testing.T) {
	ctx := context.Background()
	s, _ := newStore(t)
	jid := "weather@agents.example"
	found := func(q string) bool {
		got, _ := search(t, s, db.Scope{All: true}, q, db.Page{Max: 10})
		return slices.Contains(got, "weather")
	}

	mustRegister(t, s, manifest(jid, "1", "weather", "Weather Station"))
	mustRegister(t, s, manifest(jid, "2", "weather", "Météo Station"))
	if found("weather") {
		t.Error("registered but inactive endpoint found")
	}
	mustActivate(t, s, jid, "1")
	checkIndex(t, s)
	if !found("WEATHER STATION") || found("météo") {
		t.Error("activation not indexed")
	}
	// A version switch (an UPDATE) reindexes.
	mustActivate(t, s, jid, "2")
	checkIndex(t, s)
	if found("weather station") || !found("Météo") || !found("WEATHER") {
		t.Error("version switch not reindexed")
	}
	if err := s.Deactivate(ctx, jid); err != nil {
		t.Fatal(err)
	}
	checkIndex(t, s)
	if found("weather") {
		t.Error("deactivated endpoint found")
	}
	var grams int
	if err := db.ReaderPool(s).QueryRow("SELECT count(*) FROM search_gram_count").Scan(&grams); err != nil || grams != 0 {
		t.Errorf("%d gram counts left after the last deactivation (%v)", grams, err)
	}

	// The bulk path, then a cascade from a deleted endpoint.
	vs := []db.Version{manifest("a@agents.example", "1", "a", "Alpha"), manifest(jid, "3", "weather", "Wetter")}
	if err := s.ImportVersions(ctx, vs, true); err != nil {
		t.Fatal(err)
	}
	checkIndex(t, s)
	if !found("wetter") {
		t.Error("imported activation not indexed")
	}
	if _, err := db.WriterPool(s).Exec(db.Q(s, "DELETE FROM endpoint WHERE jid = ?"), jid); err != nil {
		t.Fatal(err)
	}
	checkIndex(t, s)
	// A write past the Store's methods is like another process's: the
	// index in memory notices it within MemRecheck.
	time.Sleep(db.MemRecheck + 10*time.Millisecond)
	if found("wetter") {
		t.Error("deleted endpoint found")
	}
}

// TestSearchQueryPlans: no search query and no trigger statement scans a
// table; pages read postings in jid order without sorting them.
func TestSearchQueryPlans(t *testing.T) {
	sqliteOnly(t, "EXPLAIN QUERY PLAN")
	s, _ := newStore(t)
	// scanOK names what a plan may scan besides json_each: the bounded
	// subquery of the count sample.
	const scanOK = "SCAN d"
	plan := func(t *testing.T, query string) string {
		t.Helper()
		args := make([]any, strings.Count(query, "?"))
		for i := range args {
			args[i] = "x"
		}
		rows, err := db.WriterPool(s).Query("EXPLAIN QUERY PLAN "+query, args...)
		if err != nil {
			t.Fatalf("%v\n%s", err, query)
		}
		defer rows.Close()
		var steps []string
		for rows.Next() {
			var id, parent, unused int
			var detail string
			if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
				t.Fatal(err)
			}
			steps = append(steps, detail)
		}
		text := strings.Join(steps, "\n")
		for _, step := range steps {
			if strings.HasPrefix(step, "SCAN ") && !strings.Contains(step, "VIRTUAL TABLE") && step != scanOK {
				t.Errorf("plan scans a table (%s):\n%s\n%s", step, text, query)
			}
		}
		return text
	}
	for name, query := range db.SearchQueries {
		t.Run(name, func(t *testing.T) {
			text := plan(t, query)
			switch name {
			case "asc-all", "desc-all":
				if !strings.Contains(text, "SEARCH d USING PRIMARY KEY (gram=? AND jid>? AND jid<?)") || strings.Contains(text, "TEMP B-TREE") {
					t.Errorf("plan is not an ordered posting range:\n%s", text)
				}
			case "count-all":
				if !strings.Contains(text, "SEARCH d USING PRIMARY KEY (gram=?)") {
					t.Errorf("plan does not walk one gram's postings:\n%s", text)
				}
			case "asc-scope", "desc-scope", "count-scope":
				if !strings.Contains(text, "SEARCH t USING PRIMARY KEY (jid=?)") {
					t.Errorf("plan does not probe per JID:\n%s", text)
				}
			}
		})
	}
	// The trigger bodies, with new.x and old.x as parameters.
	rows, err := db.ReaderPool(s).Query("SELECT name, sql FROM sqlite_schema WHERE type = 'trigger' AND name LIKE 'search_index_%'")
	if err != nil {
		t.Fatal(err)
	}
	triggers := map[string]string{}
	for rows.Next() {
		var name, body string
		if err := rows.Scan(&name, &body); err != nil {
			t.Fatal(err)
		}
		triggers[name] = body
	}
	rows.Close()
	if len(triggers) != 3 {
		t.Fatalf("%d search triggers", len(triggers))
	}
	ref := regexp.MustCompile(`\b(new|old)\.\w+`)
	for name, body := range triggers {
		_, body, _ = strings.Cut(body, "BEGIN")
		body, _, _ = strings.Cut(body, "END")
		for i, stmt := range strings.Split(body, ";") {
			if strings.TrimSpace(stmt) == "" {
				continue
			}
			t.Run(fmt.Sprintf("%s-%d", name, i), func(t *testing.T) { plan(t, ref.ReplaceAllString(stmt, "?")) })
		}
	}
}

// TestSearchAfterUpgrade: a database upgraded from every frozen schema has
// its active endpoints indexed, and the same search objects as a new one.
func TestSearchAfterUpgrade(t *testing.T) {
	sqliteOnly(t, "upgrades a SQLite schema")
	fresh, _ := newStore(t)
	want := searchObjects(t, fresh)
	// search_text, search_gram, search_gram_count and their three
	// triggers; search_generation and its three (search_mem.go).
	if len(want) != 10 {
		t.Fatalf("fresh schema has %d search objects: %v", len(want), slices.Collect(maps.Keys(want)))
	}
	for _, f := range frozenSchemas {
		t.Run(fmt.Sprintf("v%d", f.version), func(t *testing.T) {
			sqlText, err := os.ReadFile(f.file)
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(t.TempDir(), "old.db")
			execRaw(t, path, string(sqlText))
			s, _ := openAt(t, path)
			if got := searchObjects(t, s); !maps.Equal(got, want) {
				t.Errorf("upgraded search schema differs from schema.sql:\n%v\nwant\n%v", got, want)
			}
			checkIndex(t, s)
			got, count := search(t, s, db.Scope{All: true}, "STATION", db.Page{Max: 10})
			if !slices.Equal(got, []string{"weather"}) || count != 1 {
				t.Errorf("search after upgrade = %q count %d", got, count)
			}
			if got, _ := search(t, s, db.Scope{All: true}, "echo", db.Page{Max: 10}); got != nil {
				t.Errorf("inactive echo found after upgrade: %q", got)
			}
			// The triggers work on the upgraded database.
			mustActivate(t, s, "echo@agents.example", "0.1.0")
			checkIndex(t, s)
			if got, _ := search(t, s, db.Scope{All: true}, "ECHO", db.Page{Max: 10}); !slices.Equal(got, []string{"echo"}) {
				t.Errorf("echo after activation: %q", got)
			}
		})
	}
}

// searchObjects returns the SQL of the search index's tables and triggers,
// with white space normalized.
func searchObjects(t *testing.T, s *db.Store) map[string]string {
	t.Helper()
	out := map[string]string{}
	space := regexp.MustCompile(`\s+`)
	queryMap(t, db.ReaderPool(s), "SELECT name, sql FROM sqlite_schema WHERE name LIKE 'search_%'", func(k, v string) {
		out[k] = space.ReplaceAllString(v, " ")
	})
	return out
}
