package db

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
)

// The hot reads from memory. The in-memory search index (search_mem.go)
// also holds each active endpoint's summary, and with its JIDs and display
// names it is the directory: Store.ActiveSummary and Store.Directory answer
// from it as Store.Search does, checked against the same search
// generation, and exactly as the SQL path would
// (TestSnapshotMatchesSQL). A store with more than maxMemIndexed
// endpoints, or one built with SQLSearchOnly, asks SQLite as before.
//
// Under a context from MemoryOnly, the store answers only what it can
// without a database round trip and fails everything else with
// ErrWouldBlock: the gateway answers hot reads on its read loop that way,
// and hands whatever would block to a worker.

// ErrWouldBlock is the error of a store call, under a MemoryOnly context,
// that would have to ask the database.
var ErrWouldBlock = errors.New("db: the answer needs the database")

type memoryOnlyKey struct{}

// MemoryOnly returns a context under which the store never asks the
// database: calls it cannot answer from memory fail with ErrWouldBlock at
// once, before any work.
func MemoryOnly(ctx context.Context) context.Context {
	return context.WithValue(ctx, memoryOnlyKey{}, true)
}

// memoryOnly reports whether ctx came from MemoryOnly.
func memoryOnly(ctx context.Context) bool {
	v, _ := ctx.Value(memoryOnlyKey{}).(bool)
	return v
}

// activeSummariesQuery reads every active endpoint's summary in JID order,
// as search_text holds them.
const activeSummariesQuery = `SELECT a.jid, m.version, m.hash,
		m.name, m.title, m.description, m.created_at
	FROM active_endpoint AS a
	JOIN manifest_version AS m ON m.endpoint_jid = a.jid AND m.version = a.version
	ORDER BY a.jid`

// loadSummaries reads the summaries of idx.jids in tx's snapshot. If the
// active endpoints do not line up with search_text (they always do: the
// triggers keep them so), the summaries stay unused.
func (idx *memIndex) loadSummaries(ctx context.Context, tx *txn) error {
	rows, err := tx.query(ctx, activeSummariesQuery)
	if err != nil {
		return fmt.Errorf("db: endpoint summaries: %w", err)
	}
	defer rows.Close()
	out := make([]Version, 0, len(idx.jids))
	aligned := true
	for rows.Next() {
		var (
			v       Version
			hash    []byte
			created int64
		)
		if err := rows.Scan(&v.JID, &v.Version, &hash, &v.Name, &v.Title, &v.Description, &created); err != nil {
			return fmt.Errorf("db: endpoint summaries: %w", err)
		}
		if v.Hash, err = scanHash(hash); err != nil {
			return fmt.Errorf("db: endpoint summary of %s: %w", v.JID, err)
		}
		v.CreatedAt = fromMillis(created)
		if len(out) >= len(idx.jids) || idx.jids[len(out)] != v.JID {
			aligned = false
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("db: endpoint summaries: %w", err)
	}
	if aligned && len(out) == len(idx.jids) {
		idx.summaries = out
	}
	return nil
}

// snapshot returns the in-memory index for a hot read, or nil when the
// read is to ask SQLite (too many endpoints, SQLSearchOnly). Under a
// MemoryOnly context it fails with ErrWouldBlock unless the index is
// current without asking the store.
func (s *Store) snapshot(ctx context.Context) (*memIndex, error) {
	if s.sqlSearchOnly {
		if memoryOnly(ctx) {
			return nil, ErrWouldBlock
		}
		return nil, nil
	}
	idx, err := s.memIndexFor(ctx)
	if err != nil {
		return nil, err
	}
	if idx.tooBig || idx.summaries == nil {
		if memoryOnly(ctx) {
			return nil, ErrWouldBlock
		}
		return nil, nil
	}
	return idx, nil
}

// View names the state the hot reads answer from: the in-memory index as
// of one search generation. Two calls of MemoryView that return the same
// View saw the same endpoints, versions and directory, so an answer read
// from memory under one View holds for as long as MemoryView returns it
// (the gateway's answer memo keeps answers by it). The zero View is none.
//
// A View is the index's generation, not the index: within one Store an
// index is rebuilt only for a later generation, so the generation names it
// as well, and a View kept for a while (a stale memo entry) does not keep
// a replaced index, the whole directory, alive.
type View struct{ gen int64 }

// MemoryView returns the View the hot reads would answer from now, under
// the same freshness as theirs: checked against the store's search
// generation within memRecheck and since this Store's last write. Under a
// MemoryOnly context it fails with ErrWouldBlock where they would, and for
// a store whose hot reads ask SQLite.
func (s *Store) MemoryView(ctx context.Context) (View, error) {
	idx, err := s.snapshot(ctx)
	if err != nil {
		return View{}, err
	}
	if idx == nil {
		return View{}, ErrWouldBlock
	}
	return View{idx.gen}, nil
}

// errNoActiveSummary is the memory path's not-found: made once, so that a
// missing endpoint costs no allocation more than a present one does.
var errNoActiveSummary = fmt.Errorf("db: no active version: %w", ErrNotFound)

// summary is ActiveSummary from memory: one binary search, whether the
// endpoint is there or not.
func (idx *memIndex) summary(jid string) (Version, error) {
	i, ok := slices.BinarySearch(idx.jids, jid)
	if !ok {
		return Version{}, errNoActiveSummary
	}
	return idx.summaries[i], nil
}

// directory is Store.Directory from memory: directoryCount and
// directoryItems over the same rows.
func (idx *memIndex) directory(sc Scope, p Page) DirectoryPage {
	if !sc.All {
		jids := visibleJIDs(sc.JIDs)
		var cands []int32
		for _, j := range jids {
			if i, ok := slices.BinarySearch(idx.jids, j); ok {
				cands = append(cands, int32(i))
			}
		}
		page := DirectoryPage{Count: len(cands)}
		if p.Max <= 0 || page.Count == 0 {
			return page
		}
		lower, upper, descending, offset := pageBounds(p)
		page.Items = idx.walk(cands, "", lower, upper, descending, offset, p.Max)
		return page
	}
	page := DirectoryPage{Count: len(idx.jids)}
	if p.Max <= 0 || page.Count == 0 {
		return page
	}
	lower, upper, descending, offset := pageBounds(p)
	// The entries strictly inside the bounds: [from, to).
	from := sort.Search(len(idx.jids), func(i int) bool { return idx.jids[i] > lower })
	to := sort.Search(len(idx.jids), func(i int) bool { return idx.jids[i] >= upper })
	if descending {
		from = max(from, to-p.Max)
	} else {
		from = min(from+offset, to)
		to = min(to, from+p.Max)
	}
	items := make([]Item, 0, max(to-from, 0))
	for i := from; i < to; i++ {
		items = append(items, Item{JID: idx.jids[i], Name: idx.names[i]})
	}
	page.Items = items
	return page
}
