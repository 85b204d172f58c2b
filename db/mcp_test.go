package db_test

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"agentgw/db"
)

// TestRecordImport follows an mcp endpoint through imports: the first
// registers and activates; an identical one changes nothing but the
// skipped list; a changed one registers and activates a new version; a
// return to an earlier list activates that version again; an unchanged
// import leaves an operator's deactivation alone.
func TestRecordImport(t *testing.T) {
	ctx := context.Background()
	s, clk := newStore(t)
	const ep = "everything@agents.example"
	v1 := manifest(ep, "mcp-111111111111", "everything", "")
	v2 := manifest(ep, "mcp-222222222222", "everything", "")
	skipped := []db.SkippedTool{{Tool: "lookbehind", Reason: "inputSchema/properties/x/pattern: not RE2"}}

	record := func(v db.Version, sk []db.SkippedTool, want db.ImportOutcome) {
		t.Helper()
		got, err := s.RecordImport(ctx, v, sk)
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("RecordImport(%s) = %+v, want %+v", v.Version, got, want)
		}
	}
	record(v1, nil, db.ImportOutcome{Registered: true, Changed: true, Activated: true, Active: v1.Version})
	st, err := s.Status(ctx, ep)
	if err != nil || st.Origin != db.OriginMCP || st.Active != v1.Version {
		t.Fatalf("status %+v, %v", st, err)
	}
	version, err := s.DataVersion(ctx)
	if err != nil {
		t.Fatal(err)
	}

	// Identical tools: nothing is written at all.
	clk.Advance(time.Minute)
	record(v1, nil, db.ImportOutcome{Active: v1.Version})
	if again, err := s.DataVersion(ctx); err != nil || again != version {
		t.Errorf("data version %d after an unchanged import, was %d (%v)", again, version, err)
	}
	// The same manifest, but another tool was left out: only that is kept.
	record(v1, skipped, db.ImportOutcome{Active: v1.Version})
	imports, err := s.Imports(ctx, ep)
	if err != nil {
		t.Fatal(err)
	}
	want := []db.Import{{Version: v1.Version, Skipped: skipped, ImportedAt: epoch, Latest: true}}
	if !reflect.DeepEqual(imports, want) {
		t.Errorf("imports %+v, want %+v", imports, want)
	}

	clk.Advance(time.Minute)
	record(v2, nil, db.ImportOutcome{Registered: true, Changed: true, Activated: true, Active: v2.Version})
	clk.Advance(time.Minute)
	record(v1, skipped, db.ImportOutcome{Changed: true, Activated: true, Active: v1.Version})
	imports, err = s.Imports(ctx, ep)
	if err != nil {
		t.Fatal(err)
	}
	want = []db.Import{
		{Version: v1.Version, Skipped: skipped, ImportedAt: epoch.Add(3 * time.Minute), Latest: true},
		{Version: v2.Version, Skipped: []db.SkippedTool{}, ImportedAt: epoch.Add(2 * time.Minute)},
	}
	if !reflect.DeepEqual(imports, want) {
		t.Errorf("imports %+v, want %+v", imports, want)
	}

	// The operator deactivates; the same tools again change nothing.
	if err := s.Deactivate(ctx, ep); err != nil {
		t.Fatal(err)
	}
	record(v1, skipped, db.ImportOutcome{})
	// Removing the last import's version forgets it: the next import of
	// the same tools restores and activates it.
	if err := s.RemoveVersion(ctx, ep, v1.Version); err != nil {
		t.Fatal(err)
	}
	if imports, _ := s.Imports(ctx, ep); len(imports) != 1 || imports[0].Latest {
		t.Errorf("imports after removal %+v", imports)
	}
	record(v1, nil, db.ImportOutcome{Registered: true, Changed: true, Activated: true, Active: v1.Version})
}

func TestRecordImportKeepsOrigin(t *testing.T) {
	ctx := context.Background()
	s, _ := newStore(t)
	v := manifest("weather@agents.example", "mcp-333333333333", "weather", "")
	mustRegister(t, s, manifest("weather@agents.example", "1.0", "weather", ""))
	if _, err := s.RecordImport(ctx, v, nil); err != nil {
		t.Fatal(err)
	}
	st, err := s.Status(ctx, v.JID)
	if err != nil || st.Origin != db.OriginAdmin || st.Active != v.Version {
		t.Errorf("status %+v, %v", st, err)
	}
	if imports, err := s.Imports(ctx, "nobody@agents.example"); err != nil || imports != nil {
		t.Errorf("imports of an unknown endpoint: %v, %v", imports, err)
	}
	bad := v
	bad.Canonical = nil
	if _, err := s.RecordImport(ctx, bad, nil); err == nil || errors.Is(err, db.ErrNotFound) {
		t.Errorf("empty manifest: %v", err)
	}
}
