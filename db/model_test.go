package db_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"agentgw/db"
)

// modelSteps sets the length of TestModelHotReads; 0 is the bounded run
// of CI. The longer run is in docs/fuzzing.md.
var modelSteps = flag.Int("model.steps", 0, "steps of the model test (0: the bounded CI run)")

// modelSeed replays a logged run of the model tests (0: a new seed).
var modelSeed = flag.Uint64("model.seed", 0, "seed of the model tests (0: a new one, logged)")

// TestModelHotReads interleaves activations, registrations, imports,
// deactivations and removals made through a separate Store (the CLI's
// handle on the file), and now and then through the serving Store itself
// (the gateway's own MCP import), with every hot read the serving Store
// answers from memory: ActiveSummary, Directory and Search, each first
// under MemoryOnly (the gateway's read loop) and on ErrWouldBlock as a
// worker asks. Right after a write, a summary must be a stored version's
// own row; once db.MemRecheck has passed, every answer must equal the SQL
// path's (a third Store with SQLSearchOnly).
func TestModelHotReads(t *testing.T) {
	steps := *modelSteps
	if steps == 0 {
		steps = 60
	}
	seed := *modelSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (steps %d)", seed, steps)
	rnd := rand.New(rand.NewPCG(seed, 25))
	ctx := context.Background()
	path := newLocation(t)
	serving, _ := openAt(t, path)
	writer, _ := openAt(t, path)
	ref, _ := openAt(t, path)
	db.SQLSearchOnly(ref)

	var jids []string
	for i := range 12 {
		jids = append(jids, fmt.Sprintf("e%02d@agents.example", i))
	}
	// Version v of endpoint i: endpoints 0-5 keep their name across
	// versions (an MCP import), the others are renamed by each.
	version := func(i, v int) db.Version {
		name := fmt.Sprintf("agent%d", i)
		if i >= 6 {
			name = fmt.Sprintf("agent%d v%d", i, v)
		}
		return manifest(jids[i], fmt.Sprintf("mcp-%d", v), name, "Title "+name)
	}
	mem := func(read func(context.Context) (any, error)) (any, error) {
		out, err := read(db.MemoryOnly(ctx))
		if errors.Is(err, db.ErrWouldBlock) {
			return read(ctx)
		}
		return out, err
	}
	scopes := []db.Scope{{All: true}, {}, {JIDs: []string{jids[0], jids[3], jids[7], "nobody@agents.example"}}}
	queries := []string{"agent", "agent1", "v2", "title agent7", "e0", "zzz"}

	check := func(fresh bool, last string) {
		t.Helper()
		for _, j := range append(jids, "nobody@agents.example") {
			got, gerr := mem(func(ctx context.Context) (any, error) { return serving.ActiveSummary(ctx, j) })
			want, werr := ref.ActiveSummary(ctx, j)
			if gerr != nil && !errors.Is(gerr, db.ErrNotFound) {
				t.Fatalf("summary of %s after %s: %v", j, last, gerr)
			}
			if fresh && (errors.Is(gerr, db.ErrNotFound) != errors.Is(werr, db.ErrNotFound) || (gerr == nil && !reflect.DeepEqual(got, want))) {
				t.Fatalf("summary of %s after %s:\nmemory %+v %v\nSQL    %+v %v", j, last, got, gerr, want, werr)
			}
			if gerr == nil {
				// Never a mix: the summary is the row of the version it
				// names (which another process may have removed since).
				s := got.(db.Version)
				var e, v int
				if _, err := fmt.Sscanf(s.JID+" "+s.Version, "e%d@agents.example mcp-%d", &e, &v); err != nil {
					t.Fatalf("summary of %s after %s: %+v", j, last, s)
				}
				row := version(e, v)
				if s.JID != j || row.Hash != s.Hash || row.Name != s.Name || row.Title != s.Title || row.Description != s.Description {
					t.Fatalf("summary of %s after %s is no version's row: %+v", j, last, s)
				}
			}
		}
		if !fresh {
			return
		}
		for _, sc := range scopes {
			for _, p := range []db.Page{{Max: 5}, {Max: 50}, {Max: 3, After: &jids[4]}, {Max: 2, Before: &jids[9]}} {
				got, err := mem(func(ctx context.Context) (any, error) { return serving.Directory(ctx, sc, p) })
				if err != nil {
					t.Fatal(err)
				}
				want, err := ref.Directory(ctx, sc, p)
				if err != nil {
					t.Fatal(err)
				}
				if g := got.(db.DirectoryPage); !samePage(g.Items, want.Items) || g.Count != want.Count {
					t.Fatalf("directory %+v %+v after %s:\nmemory %+v\nSQL    %+v", sc, p, last, g, want)
				}
				for _, q := range queries {
					got, err := mem(func(ctx context.Context) (any, error) { return serving.Search(ctx, sc, q, p) })
					if err != nil {
						t.Fatal(err)
					}
					want, err := ref.Search(ctx, sc, q, p)
					if err != nil {
						t.Fatal(err)
					}
					if g := got.(db.SearchPage); !samePage(g.Items, want.Items) || g.Count != want.Count {
						t.Fatalf("search %q %+v %+v after %s:\nmemory %+v\nSQL    %+v", q, sc, p, last, g, want)
					}
				}
			}
		}
	}

	writes := 0
	last := "nothing"
	for i := 0; i < steps; i++ {
		e, v := rnd.IntN(len(jids)), 1+rnd.IntN(4)
		row := version(e, v)
		s, who := writer, "writer"
		if rnd.IntN(5) == 0 {
			s, who = serving, "serving"
		}
		var err error
		op := ""
		switch rnd.IntN(8) {
		case 0, 1:
			op = "import"
			_, err = s.RecordImport(ctx, row, nil)
		case 2:
			op = "register"
			_, err = s.RegisterVersion(ctx, row, db.OriginAdmin)
		case 3, 4:
			op = "activate"
			err = s.Activate(ctx, row.JID, row.Version, &row.Hash)
		case 5:
			op = "deactivate"
			err = s.Deactivate(ctx, row.JID)
		case 6:
			op = "remove-version"
			err = s.RemoveVersion(ctx, row.JID, row.Version)
		case 7:
			op = "remove-endpoint"
			err = s.RemoveEndpoint(ctx, row.JID)
		}
		switch {
		case err == nil:
			writes++
		case errors.Is(err, db.ErrNotFound), errors.Is(err, db.ErrActive), errors.Is(err, db.ErrConflict), errors.Is(err, db.ErrRetained):
		default:
			t.Fatalf("%s %s %s %s: %v", who, op, row.JID, row.Version, err)
		}
		last = fmt.Sprintf("%s %s %s %s (%v)", who, op, row.JID, row.Version, err)
		check(false, last)
		if rnd.IntN(4) == 0 || i == steps-1 {
			time.Sleep(db.MemRecheck + 150*time.Millisecond)
			check(true, last)
		}
	}
	t.Logf("%d writes", writes)
}

// samePage compares two pages' items, an empty page being nil or empty.
func samePage(a, b []db.Item) bool {
	if len(a) == 0 && len(b) == 0 {
		return true
	}
	return reflect.DeepEqual(a, b)
}
