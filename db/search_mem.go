package db

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"agentgw/db/internal/searchtext"
)

// The search index in memory: Store.Search answers a non-empty query, and
// the directory and endpoint summaries are answered, from a copy of
// search_text held in memory, with the same postings as search_gram, when
// the directory has at most maxMemIndexed entries. It is checked against
// search_generation after this Store's own write, or when the last check
// is older than memRecheck (250 ms: another process's change), and rebuilt
// whole when that moved; its answers are exactly the SQL path's
// (TestMemSearchMatchesSQL). Costs and memory: docs/store.md, "The index
// in memory".

// maxMemIndexed is the largest directory indexed in memory.
const maxMemIndexed = 100_000

const (
	searchGenerationQuery = `SELECT n FROM search_generation WHERE id = 1`
	searchTextsQuery      = `SELECT jid, folded, display_name FROM search_text ORDER BY jid`
	searchTextCount       = `SELECT count(*) FROM search_text`
)

// memIndex is search_text as of one generation, in JID order, with the
// postings of every gram (indices into the slices, ascending).
type memIndex struct {
	gen    int64
	tooBig bool // more than maxMemIndexed entries: not indexed
	jids   []string
	folded []string
	names  []string
	grams  map[string][]int32
	// summaries are the active versions of jids, without their canonical
	// bytes, for the hot reads (snapshot.go); nil if they could not be
	// lined up with jids.
	summaries []Version
}

// memRecheck is how long an index is trusted without asking the store
// for the search generation, unless this Store has written since: a change
// made by another process (the CLI) is searched within this time.
const memRecheck = 250 * time.Millisecond

// memSearch holds the current memIndex.
type memSearch struct {
	cur   atomic.Pointer[memIndex]
	mu    sync.Mutex   // serializes rebuilds
	dirty atomic.Bool  // this Store has committed a write since the last check
	check atomic.Int64 // monotonic nanoseconds (sinceMemEpoch) of the last check that found cur current
	// recheck, if positive, replaces memRecheck (Store.SetRecheck).
	recheck atomic.Int64
}

// SetRecheck sets how long the in-memory index is trusted without asking
// the store, in place of memRecheck (250 ms); d <= 0 restores it. A test
// that counts memo hits sets it long, so that a busy machine's pauses do
// not put a recheck between two reads; any other caller leaves it alone.
// It may be called while the Store is in use.
func (s *Store) SetRecheck(d time.Duration) { s.mem.recheck.Store(int64(d)) }

// trusted is how long an index is trusted without a check.
func (m *memSearch) trusted() int64 {
	if d := m.recheck.Load(); d > 0 {
		return d
	}
	return int64(memRecheck)
}

// memEpoch is the origin of memSearch.check. Durations from it are read
// on the monotonic clock, so a step of the wall clock (NTP, a suspended
// VM) neither extends nor shortens how long an index is trusted: with
// wall-clock stamps a step back of N seconds trusted a stale index for N
// seconds more, and the directory stopped following another process.
var memEpoch = time.Now()

// sinceMemEpoch is now on memSearch.check's scale.
func sinceMemEpoch() int64 { return int64(time.Since(memEpoch)) }

// markDirty records that this Store has committed a write.
func (m *memSearch) markDirty() { m.dirty.Store(true) }

// memIndexFor returns an index that is current: checked against the
// store's search generation within memRecheck, and since this Store's last
// write; rebuilt if the generation has moved on. A search between checks
// asks the store nothing.
func (s *Store) memIndexFor(ctx context.Context) (*memIndex, error) {
	cur := s.mem.cur.Load()
	if cur != nil && !s.mem.dirty.Load() && sinceMemEpoch()-s.mem.check.Load() < s.mem.trusted() {
		return cur, nil
	}
	if memoryOnly(ctx) {
		return nil, ErrWouldBlock
	}
	// Cleared before the generation is read: a write that commits after
	// the read marks it again.
	s.mem.dirty.Store(false)
	checked := sinceMemEpoch()
	var gen int64
	if err := s.hotRow(ctx, searchGenerationQuery).Scan(&gen); err != nil {
		s.mem.dirty.Store(true)
		return nil, fmt.Errorf("db: search generation: %w", err)
	}
	s.mem.mu.Lock()
	defer s.mem.mu.Unlock()
	if cur := s.mem.cur.Load(); cur != nil && cur.gen >= gen {
		s.mem.check.Store(checked)
		return cur, nil
	}
	idx, err := s.buildMemIndex(ctx)
	if err != nil {
		s.mem.dirty.Store(true)
		return nil, err
	}
	s.mem.cur.Store(idx)
	s.mem.check.Store(checked)
	return idx, nil
}

// buildMemIndex reads search_text and its generation in one snapshot.
func (s *Store) buildMemIndex(ctx context.Context) (*memIndex, error) {
	tx, err := s.beginRead(ctx)
	if err != nil {
		return nil, fmt.Errorf("db: search index: %w", err)
	}
	defer tx.rollback()
	idx := &memIndex{}
	if err := tx.queryRow(ctx, searchGenerationQuery).Scan(&idx.gen); err != nil {
		return nil, fmt.Errorf("db: search index: %w", err)
	}
	var n int
	if err := tx.queryRow(ctx, searchTextCount).Scan(&n); err != nil {
		return nil, fmt.Errorf("db: search index: %w", err)
	}
	if n > maxMemIndexed {
		idx.tooBig = true
		return idx, tx.commit()
	}
	rows, err := tx.query(ctx, searchTextsQuery)
	if err != nil {
		return nil, fmt.Errorf("db: search index: %w", err)
	}
	defer rows.Close()
	idx.jids = make([]string, 0, n)
	idx.folded = make([]string, 0, n)
	idx.names = make([]string, 0, n)
	idx.grams = make(map[string][]int32)
	for rows.Next() {
		var jid, folded, name string
		if err := rows.Scan(&jid, &folded, &name); err != nil {
			return nil, fmt.Errorf("db: search index: %w", err)
		}
		i := int32(len(idx.jids))
		idx.jids = append(idx.jids, jid)
		idx.folded = append(idx.folded, folded)
		idx.names = append(idx.names, name)
		for _, g := range searchtext.Grams(folded) {
			idx.grams[g] = append(idx.grams[g], i)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("db: search index: %w", err)
	}
	if err := idx.loadSummaries(ctx, tx); err != nil {
		return nil, err
	}
	return idx, tx.commit()
}

// search answers a non-empty folded query as searchAll or searchScoped
// would from the same snapshot.
func (idx *memIndex) search(sc Scope, folded string, p Page) SearchPage {
	if sc.All {
		return idx.searchAll(folded, p)
	}
	return idx.searchScoped(visibleJIDs(sc.JIDs), folded, p)
}

// match reports whether entry i contains the folded query.
func (idx *memIndex) match(i int32, folded string) bool {
	return strings.Contains(idx.folded[i], folded)
}

func (idx *memIndex) searchAll(folded string, p Page) SearchPage {
	var driver []int32
	fewest := -1
	for _, g := range searchtext.QueryGrams(folded) {
		if ps := idx.grams[g]; fewest < 0 || len(ps) < fewest {
			driver, fewest = ps, len(ps)
		}
	}
	if fewest <= 0 {
		return SearchPage{}
	}
	var page SearchPage
	switch {
	case utf8.RuneCountInString(folded) <= searchtext.MaxGram:
		page.Count = fewest
	case fewest <= countExactLimit:
		for _, i := range driver {
			if idx.match(i, folded) {
				page.Count++
			}
		}
	default:
		hits := 0
		for _, i := range driver[:countSampleSize] {
			if idx.match(i, folded) {
				hits++
			}
		}
		page.Count = (hits*fewest + countSampleSize/2) / countSampleSize
		page.CountEstimated = true
	}
	if p.Max <= 0 || (page.Count == 0 && !page.CountEstimated) {
		return page
	}
	lower, upper, descending, offset := pageBounds(p)
	limit := p.Max
	if p.After == nil && !descending && !page.CountEstimated {
		limit = min(limit, page.Count-offset)
		if limit <= 0 {
			return page
		}
	}
	page.Items = idx.walk(driver, folded, lower, upper, descending, offset, limit)
	page.Count = max(page.Count, len(page.Items))
	return page
}

func (idx *memIndex) searchScoped(scope []string, folded string, p Page) SearchPage {
	var matches []int32
	for _, jid := range scope {
		if i, ok := slices.BinarySearch(idx.jids, jid); ok && idx.match(int32(i), folded) {
			matches = append(matches, int32(i))
		}
	}
	page := SearchPage{Count: len(matches)}
	if p.Max <= 0 || page.Count == 0 {
		return page
	}
	lower, upper, descending, offset := pageBounds(p)
	page.Items = idx.walk(matches, folded, lower, upper, descending, offset, p.Max)
	return page
}

// walk pages through candidates (ascending entry indices): those strictly
// between lower and upper that match, skipping offset of them, at most
// limit, from the top if descending; the items are in JID order.
func (idx *memIndex) walk(candidates []int32, folded, lower, upper string, descending bool, offset, limit int) []Item {
	items := make([]Item, 0, min(limit, maxPreallocatedItems))
	take := func(i int32) bool {
		jid := idx.jids[i]
		if jid <= lower || jid >= upper || !idx.match(i, folded) {
			return true
		}
		if offset > 0 {
			offset--
			return true
		}
		items = append(items, Item{JID: jid, Name: idx.names[i]})
		return len(items) < limit
	}
	// The candidates strictly inside the bounds: [from, to).
	from, _ := slices.BinarySearchFunc(candidates, lower, func(i int32, b string) int {
		if idx.jids[i] <= b {
			return -1
		}
		return 1
	})
	to, _ := slices.BinarySearchFunc(candidates, upper, func(i int32, b string) int {
		if idx.jids[i] < b {
			return -1
		}
		return 1
	})
	if descending {
		for k := to - 1; k >= from; k-- {
			if !take(candidates[k]) {
				break
			}
		}
		slices.Reverse(items)
		return items
	}
	for _, i := range candidates[from:to] {
		if !take(i) {
			break
		}
	}
	return items
}
