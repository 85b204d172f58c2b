package db_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"agentgw/db"
)

// benchSizes are the directory sizes benchmarked, in active endpoints.
var benchSizes = []struct {
	name string
	n    int
}{
	{"1k", 1_000},
	{"10k", 10_000},
	{"100k", 100_000},
}

// benchPageSize is the page size of the directory benchmarks.
const benchPageSize = 50

func benchJID(i int) string { return fmt.Sprintf("agent%06d@agents.example", i) }

// benchStore builds a store with n active endpoints through ImportVersions,
// the bulk path: through RegisterVersion and Activate each endpoint costs two
// durable commits (see BenchmarkRegisterAndActivate).
func benchStore(b *testing.B, n int) *db.Store {
	b.Helper()
	return benchStoreAt(b, newLocation(b), n)
}

// benchStoreAt is benchStore on the store at location.
func benchStoreAt(b *testing.B, location string, n int) *db.Store {
	b.Helper()
	s, _ := openAt(b, location)
	vs := make([]db.Version, n)
	for i := range vs {
		vs[i] = manifest(benchJID(i), "1.0.0", fmt.Sprintf("agent %d", i), "")
	}
	start := time.Now()
	if err := s.ImportVersions(context.Background(), vs, true); err != nil {
		b.Fatal(err)
	}
	b.Logf("imported %d active endpoints in %v", n, time.Since(start).Round(time.Millisecond))
	return s
}

// BenchmarkDirectoryPage measures one directory page of 50 at each size: from
// the middle via After for everyone (the common RSM case), the last page via
// Before, the middle via Index (OFFSET, linear by design), and the first page
// of a 20-JID scope. Besides ns/op it reports the median and 99th percentile
// latency of single calls.
func BenchmarkDirectoryPage(b *testing.B) {
	for _, size := range benchSizes {
		b.Run(size.name, func(b *testing.B) {
			s := benchStore(b, size.n)
			all := db.Scope{All: true}
			middle := benchJID(size.n / 2)
			var scope db.Scope
			for i := range 20 {
				scope.JIDs = append(scope.JIDs, benchJID(i*size.n/20+7))
			}
			b.Run("all-after-middle", func(b *testing.B) {
				benchPages(b, s, all, db.Page{Max: benchPageSize, After: &middle}, benchPageSize, size.n)
			})
			b.Run("all-last-page", func(b *testing.B) {
				benchPages(b, s, all, db.Page{Max: benchPageSize, Before: ptr("")}, benchPageSize, size.n)
			})
			b.Run("all-index-middle", func(b *testing.B) {
				benchPages(b, s, all, db.Page{Max: benchPageSize, Index: ptr(size.n / 2)}, benchPageSize, size.n)
			})
			b.Run("scope-20", func(b *testing.B) {
				benchPages(b, s, scope, db.Page{Max: benchPageSize}, 20, 20)
			})
		})
	}
}

// benchPages runs Directory in a loop, checking the first result, and reports
// latency percentiles.
func benchPages(b *testing.B, s *db.Store, sc db.Scope, p db.Page, wantItems, wantCount int) {
	ctx := context.Background()
	page, err := s.Directory(ctx, sc, p)
	if err != nil {
		b.Fatal(err)
	}
	if len(page.Items) != wantItems || page.Count != wantCount {
		b.Fatalf("Directory = %d items of %d, want %d of %d", len(page.Items), page.Count, wantItems, wantCount)
	}
	latencies := make([]time.Duration, 0, b.N)
	for b.Loop() {
		start := time.Now()
		if _, err := s.Directory(ctx, sc, p); err != nil {
			b.Fatal(err)
		}
		latencies = append(latencies, time.Since(start))
	}
	reportPercentiles(b, latencies)
}

// reportPercentiles adds p50 and p99 latency metrics.
func reportPercentiles(b *testing.B, latencies []time.Duration) {
	if len(latencies) == 0 {
		return
	}
	slices.Sort(latencies)
	at := func(q float64) float64 { return float64(latencies[int(q*float64(len(latencies)-1))].Nanoseconds()) }
	b.ReportMetric(at(0.50), "p50-ns")
	b.ReportMetric(at(0.99), "p99-ns")
}

// BenchmarkRegisterAndActivate measures the public write path: one
// RegisterVersion and one Activate, each a durable (synchronous=FULL) commit.
func BenchmarkRegisterAndActivate(b *testing.B) {
	ctx := context.Background()
	s, _ := newStore(b)
	i := 0
	for b.Loop() {
		v := manifest(benchJID(i), "1.0.0", "agent", "")
		if _, err := s.RegisterVersion(ctx, v, db.OriginAdmin); err != nil {
			b.Fatal(err)
		}
		if err := s.Activate(ctx, v.JID, v.Version, &v.Hash); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkSearchPage measures one search page of 50 through Store.Search
// at 1k and 10k endpoints, from the in-memory index (memory, what a
// gateway uses up to 100,000 endpoints) and from the engine's own tables
// (sql, what it uses above): "agent", which every endpoint matches, from
// the middle; "000777", which one endpoint's JID matches. Run it on both
// engines (pgtest.RunBoth) to set PostgreSQL beside SQLite. Besides ns/op
// it reports the median and 99th percentile latency of single calls.
func BenchmarkSearchPage(b *testing.B) {
	for _, size := range benchSizes[:2] {
		b.Run(size.name, func(b *testing.B) {
			location := newLocation(b)
			s := benchStoreAt(b, location, size.n)
			// A second Store on the same database, for the SQL path.
			sqlOnly, _ := openAt(b, location)
			db.SQLSearchOnly(sqlOnly)
			middle := benchJID(size.n / 2)
			for _, path := range []struct {
				name string
				s    *db.Store
			}{{"memory", s}, {"sql", sqlOnly}} {
				b.Run(path.name+"/common-middle", func(b *testing.B) {
					benchSearch(b, path.s, "agent", db.Page{Max: benchPageSize, After: &middle}, benchPageSize)
				})
				b.Run(path.name+"/rare", func(b *testing.B) {
					benchSearch(b, path.s, "000777", db.Page{Max: benchPageSize}, 1)
				})
			}
		})
	}
}

// benchSearch runs Search in a loop, checking the first result, and
// reports latency percentiles.
func benchSearch(b *testing.B, s *db.Store, query string, p db.Page, wantItems int) {
	ctx := context.Background()
	page, err := s.Search(ctx, db.Scope{All: true}, query, p)
	if err != nil {
		b.Fatal(err)
	}
	if len(page.Items) != wantItems {
		b.Fatalf("Search(%q) = %d items, want %d", query, len(page.Items), wantItems)
	}
	latencies := make([]time.Duration, 0, b.N)
	for b.Loop() {
		start := time.Now()
		if _, err := s.Search(ctx, db.Scope{All: true}, query, p); err != nil {
			b.Fatal(err)
		}
		latencies = append(latencies, time.Since(start))
	}
	reportPercentiles(b, latencies)
}
