package db_test

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"

	"agentgw/db"
)

// checkDirectory fails unless Directory returns count and items, each item
// given as "jid=name".
func checkDirectory(t *testing.T, s *db.Store, sc db.Scope, p db.Page, count int, items ...string) {
	t.Helper()
	page, err := s.Directory(context.Background(), sc, p)
	if err != nil {
		t.Fatalf("Directory: %v", err)
	}
	var got []string
	for _, it := range page.Items {
		got = append(got, it.JID+"="+it.Name)
	}
	if page.Count != count || !slices.Equal(got, items) {
		t.Errorf("Directory(%+v, %s) = %d %q\nwant %d %q", sc, pageString(p), page.Count, got, count, items)
	}
}

// pageString shows a Page's pointers by value.
func pageString(p db.Page) string {
	out := "max=" + strconv.Itoa(p.Max)
	if p.After != nil {
		out += " after=" + *p.After
	}
	if p.Before != nil {
		out += " before=" + *p.Before
	}
	if p.Index != nil {
		out += " index=" + strconv.Itoa(*p.Index)
	}
	return out
}

func ptr[T any](v T) *T { return &v }

// directoryJIDs are the active endpoints of the directory tests in octetwise
// order. Case-insensitive order would differ ("_bot" first, "Alpha" beside
// "alpha", "Zeta" beside "zulu"), and the non-ASCII ones sort by UTF-8 bytes
// (ß is C3 9F, é is C3 A9, 日 is E6 97 A5).
var directoryJIDs = []string{
	"Alpha@agents.example",
	"Zeta@agents.example",
	"_bot@agents.example",
	"alpha@agents.example",
	"beta@agents.example",
	"zulu@agents.example",
	"ßeta@agents.example",
	"élan@agents.example",
	"日本@agents.example",
}

// directoryStore builds a store with directoryJIDs active (registered in
// reverse order, so insertion order cannot pass for sorting), one endpoint
// never activated and one deactivated. Each display name is the JID's local
// part in upper case, so the names prove they come from the active version.
func directoryStore(t *testing.T) *db.Store {
	t.Helper()
	if !slices.IsSorted(directoryJIDs) {
		t.Fatal("directoryJIDs must be in byte order")
	}
	s, _ := newStore(t)
	for _, jid := range slices.Backward(directoryJIDs) {
		mustRegister(t, s, manifest(jid, "1", "old", ""))
		mustRegister(t, s, manifest(jid, "2", "name", displayName(jid)))
		mustActivate(t, s, jid, "1")
		mustActivate(t, s, jid, "2")
	}
	mustRegister(t, s, manifest("ghost@agents.example", "1", "Ghost", ""))
	mustRegister(t, s, manifest("gone@agents.example", "1", "Gone", ""))
	mustActivate(t, s, "gone@agents.example", "1")
	if err := s.Deactivate(context.Background(), "gone@agents.example"); err != nil {
		t.Fatal(err)
	}
	return s
}

func displayName(jid string) string {
	local, _, _ := strings.Cut(jid, "@")
	return strings.ToUpper(local)
}

// entries renders directoryJIDs[i] for the listed i as "jid=name".
func entries(idx ...int) []string {
	var out []string
	for _, i := range idx {
		out = append(out, directoryJIDs[i]+"="+displayName(directoryJIDs[i]))
	}
	return out
}

func TestDirectoryAll(t *testing.T) {
	s := directoryStore(t)
	all := db.Scope{All: true}
	n := len(directoryJIDs)
	for _, tc := range []struct {
		name string
		page db.Page
		want []string
	}{
		{"first page", db.Page{Max: 3}, entries(0, 1, 2)},
		{"everything", db.Page{Max: 100}, entries(0, 1, 2, 3, 4, 5, 6, 7, 8)},
		{"count only", db.Page{}, nil},
		{"count only with cursor", db.Page{After: ptr("Alpha@agents.example")}, nil},
		{"after existing", db.Page{Max: 3, After: ptr("alpha@agents.example")}, entries(4, 5, 6)},
		{"after positional", db.Page{Max: 3, After: ptr("b@agents.example")}, entries(4, 5, 6)},
		{"after inactive", db.Page{Max: 3, After: ptr("ghost@agents.example")}, entries(5, 6, 7)},
		{"after empty", db.Page{Max: 2, After: ptr("")}, entries(0, 1)},
		{"after last", db.Page{Max: 3, After: ptr("日本@agents.example")}, nil},
		{"after upper case", db.Page{Max: 1, After: ptr("Zeta@agents.example")}, entries(2)},
		{"last page", db.Page{Max: 3, Before: ptr("")}, entries(6, 7, 8)},
		{"last page larger than all", db.Page{Max: 100, Before: ptr("")}, entries(0, 1, 2, 3, 4, 5, 6, 7, 8)},
		{"before existing", db.Page{Max: 3, Before: ptr("alpha@agents.example")}, entries(0, 1, 2)},
		{"before near start", db.Page{Max: 3, Before: ptr("Zeta@agents.example")}, entries(0)},
		{"before first", db.Page{Max: 3, Before: ptr("Alpha@agents.example")}, nil},
		{"before positional", db.Page{Max: 2, Before: ptr("c@agents.example")}, entries(3, 4)},
		{"before ignores index", db.Page{Max: 2, Before: ptr(""), Index: ptr(1)}, entries(7, 8)},
		{"after and before", db.Page{Max: 2, After: ptr("Alpha@agents.example"), Before: ptr("beta@agents.example")}, entries(2, 3)},
		{"index", db.Page{Max: 3, Index: ptr(2)}, entries(2, 3, 4)},
		{"index zero", db.Page{Max: 1, Index: ptr(0)}, entries(0)},
		{"index near end", db.Page{Max: 3, Index: ptr(n - 1)}, entries(8)},
		{"index past end", db.Page{Max: 3, Index: ptr(n)}, nil},
		{"negative index", db.Page{Max: 1, Index: ptr(-5)}, entries(0)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkDirectory(t, s, all, tc.page, n, tc.want...)
		})
	}
}

func TestDirectoryScoped(t *testing.T) {
	s := directoryStore(t)
	scope := db.Scope{JIDs: []string{
		"zulu@agents.example",
		"ghost@agents.example",  // inactive
		"gone@agents.example",   // deactivated
		"nobody@agents.example", // nonexistent
		"Alpha@agents.example",
		"zulu@agents.example", // duplicate
		"日本@agents.example",
		"ALPHA@agents.example", // a different JID, nonexistent
		"bad\xff@agents.example",
		"",
	}}
	for _, tc := range []struct {
		name string
		page db.Page
		want []string
	}{
		{"first page", db.Page{Max: 2}, entries(0, 5)},
		{"everything", db.Page{Max: 50}, entries(0, 5, 8)},
		{"count only", db.Page{}, nil},
		{"after", db.Page{Max: 2, After: ptr("zulu@agents.example")}, entries(8)},
		{"after invisible", db.Page{Max: 2, After: ptr("beta@agents.example")}, entries(5, 8)},
		{"last page", db.Page{Max: 2, Before: ptr("")}, entries(5, 8)},
		{"before", db.Page{Max: 5, Before: ptr("日本@agents.example")}, entries(0, 5)},
		{"index", db.Page{Max: 5, Index: ptr(1)}, entries(5, 8)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkDirectory(t, s, scope, tc.page, 3, tc.want...)
		})
	}
}

func TestDirectoryDeniesByDefault(t *testing.T) {
	s := directoryStore(t)
	for name, sc := range map[string]db.Scope{
		"zero scope":     {},
		"empty list":     {JIDs: []string{}},
		"only inactive":  {JIDs: []string{"ghost@agents.example", "gone@agents.example"}},
		"only unknown":   {JIDs: []string{"nobody@agents.example"}},
		"only invalid":   {JIDs: []string{"", "\xff"}},
		"all is not set": {All: false, JIDs: nil},
	} {
		t.Run(name, func(t *testing.T) {
			checkDirectory(t, s, sc, db.Page{Max: 50}, 0)
			checkDirectory(t, s, sc, db.Page{Max: 50, Before: ptr("")}, 0)
		})
	}
}

// TestDirectoryQueryPlans checks that no directory query scans the endpoint
// tables: the unscoped ones range-search the primary key in order, and the
// scoped ones probe the primary key once per listed JID.
func TestDirectoryQueryPlans(t *testing.T) {
	sqliteOnly(t, "EXPLAIN QUERY PLAN")
	s := directoryStore(t)
	for name, query := range db.DirectoryQueries {
		t.Run(name, func(t *testing.T) {
			args := make([]any, strings.Count(query, "?"))
			for i := range args {
				args[i] = "x"
			}
			rows, err := db.ReaderPool(s).Query("EXPLAIN QUERY PLAN "+query, args...)
			if err != nil {
				t.Fatal(err)
			}
			defer rows.Close()
			var plan []string
			for rows.Next() {
				var id, parent, unused int
				var detail string
				if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
					t.Fatal(err)
				}
				plan = append(plan, detail)
			}
			text := strings.Join(plan, "\n")
			for _, step := range plan {
				// json_each is the only thing a query may scan.
				if strings.HasPrefix(step, "SCAN ") && !strings.Contains(step, "VIRTUAL TABLE") {
					t.Errorf("plan scans a table (%s):\n%s", step, text)
				}
			}
			switch name {
			case "asc-all", "desc-all":
				if !strings.Contains(text, "SEARCH active_endpoint USING PRIMARY KEY (jid>? AND jid<?)") || strings.Contains(text, "TEMP B-TREE") {
					t.Errorf("plan is not an ordered primary-key range search:\n%s", text)
				}
			case "asc-scope", "desc-scope", "count-scope":
				if !strings.Contains(text, "SEARCH a USING PRIMARY KEY (jid=?)") {
					t.Errorf("plan does not probe the primary key per JID:\n%s", text)
				}
			}
			t.Logf("plan:\n%s", text)
		})
	}
}
