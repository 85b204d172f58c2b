package db

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
	"unicode/utf8"
)

// Scope is the part of the directory a requester may see. The zero value
// sees nothing: deny is the default.
type Scope struct {
	// All makes every active endpoint visible; JIDs is then ignored.
	All bool
	// JIDs lists the endpoints visible when All is false. Entries that do
	// not exist or are inactive are not visible and not counted.
	JIDs []string
}

// Page selects a page of a directory listing with XEP-0059 (Result Set
// Management) semantics. The caller parses and clamps the request; the store
// applies it to the visible active endpoints in octetwise JID order.
type Page struct {
	// Max is the page size, already clamped by the caller; 0 asks for the
	// count only.
	Max int
	// After selects items strictly after this JID. It is positional: the
	// JID need not exist or be visible.
	After *string
	// Before selects the last Max items strictly before this JID,
	// returned in ascending order. A pointer to "" selects the last page.
	// After, if also set, still bounds the items from below.
	Before *string
	// Index skips this many items of the ordered visible list (or of the
	// items after After). It is ignored when Before is set. Skipping is
	// linear in Index: prefer After for deep paging.
	Index *int
}

// Item is one directory entry: an active endpoint and its display name.
type Item struct {
	JID  string
	Name string
}

// DirectoryPage is one page of the directory and the number of visible
// active endpoints in total.
type DirectoryPage struct {
	Items []Item
	Count int
}

// noUpperBound is greater than every stored JID: stored JIDs are valid UTF-8
// (validateVersion), and the byte 0xff never occurs in valid UTF-8. Using a
// bound instead of an optional clause keeps one query per shape, and keeps it
// a range search on the primary key.
const noUpperBound = "\xff"

// maxPreallocatedItems caps the capacity reserved for a page, in case a
// caller passes an unclamped Max.
const maxPreallocatedItems = 256

// noLowerBound is less than every stored JID (endpoint.jid is never empty).
const noLowerBound = ""

// The directory queries. Both the unscoped page queries walk active_endpoint's
// primary key from a bound and stop after LIMIT rows, so a page costs the
// same at any depth and any size of table (OFFSET aside). The scoped ones
// drive from the requester's JID list (CROSS JOIN pins json_each as the outer
// loop) and probe the primary key once per listed JID, so they cost the
// length of the list, never the size of the table.
const (
	directoryCountAll = `SELECT value FROM stat WHERE name = 'active_endpoints'`

	directoryCountScoped = `SELECT count(*)
		FROM json_each(?) AS s CROSS JOIN active_endpoint AS a ON a.jid = s.value`

	directoryAscAll = `SELECT jid, display_name FROM active_endpoint
		WHERE jid > ? AND jid < ?
		ORDER BY jid LIMIT ? OFFSET ?`

	directoryDescAll = `SELECT jid, display_name FROM active_endpoint
		WHERE jid > ? AND jid < ?
		ORDER BY jid DESC LIMIT ?`

	directoryAscScoped = `SELECT a.jid, a.display_name
		FROM json_each(?) AS s CROSS JOIN active_endpoint AS a ON a.jid = s.value
		WHERE s.value > ? AND s.value < ?
		ORDER BY a.jid LIMIT ? OFFSET ?`

	directoryDescScoped = `SELECT a.jid, a.display_name
		FROM json_each(?) AS s CROSS JOIN active_endpoint AS a ON a.jid = s.value
		WHERE s.value > ? AND s.value < ?
		ORDER BY a.jid DESC LIMIT ?`
)

// Directory returns one page of the active endpoints visible in sc, ordered by
// JID octetwise, and the number of visible active endpoints. The count and
// the page come from one snapshot. It answers from the in-memory index when
// it can (snapshot.go).
func (s *Store) Directory(ctx context.Context, sc Scope, p Page) (DirectoryPage, error) {
	if idx, err := s.snapshot(ctx); err != nil {
		return DirectoryPage{}, fmt.Errorf("db: directory: %w", err)
	} else if idx != nil {
		return idx.directory(sc, p), nil
	}
	var scope string // JSON array of the visible JIDs, unless sc.All
	if !sc.All {
		jids := visibleJIDs(sc.JIDs)
		if len(jids) == 0 {
			return DirectoryPage{}, nil
		}
		b, err := json.Marshal(jids)
		if err != nil {
			return DirectoryPage{}, fmt.Errorf("db: directory: %w", err)
		}
		scope = string(b)
	}

	tx, err := s.beginRead(ctx)
	if err != nil {
		return DirectoryPage{}, fmt.Errorf("db: directory: %w", err)
	}
	defer tx.rollback()
	var page DirectoryPage
	if page.Count, err = directoryCount(ctx, tx, sc.All, scope); err != nil {
		return DirectoryPage{}, err
	}
	if p.Max > 0 && page.Count > 0 {
		if page.Items, err = directoryItems(ctx, tx, sc.All, scope, p); err != nil {
			return DirectoryPage{}, err
		}
	}
	if err := tx.commit(); err != nil {
		return DirectoryPage{}, fmt.Errorf("db: directory: %w", err)
	}
	return page, nil
}

// visibleJIDs returns the distinct valid JIDs of list, so that json_each
// yields each at most once and the count is exact. Invalid UTF-8 cannot name
// a stored endpoint, and JSON encoding would rewrite it.
func visibleJIDs(list []string) []string {
	jids := make([]string, 0, len(list))
	for _, j := range list {
		if j != "" && utf8.ValidString(j) {
			jids = append(jids, j)
		}
	}
	slices.Sort(jids)
	return slices.Compact(jids)
}

// directoryCount counts the visible active endpoints: O(1) from the stat
// table for everyone, one primary-key probe per JID for a list.
func directoryCount(ctx context.Context, tx *txn, all bool, scope string) (int, error) {
	var row *sql.Row
	if all {
		row = tx.queryRow(ctx, directoryCountAll)
	} else {
		row = tx.queryRow(ctx, directoryCountScoped, scope)
	}
	var n int
	if err := row.Scan(&n); err != nil {
		return 0, fmt.Errorf("db: directory count: %w", err)
	}
	return n, nil
}

// directoryItems reads one page.
func directoryItems(ctx context.Context, tx *txn, all bool, scope string, p Page) ([]Item, error) {
	lower, upper := noLowerBound, noUpperBound
	if p.After != nil {
		lower = *p.After
	}
	descending := p.Before != nil
	if descending && *p.Before != "" {
		upper = *p.Before
	}
	offset := 0
	if p.Index != nil && *p.Index > 0 && !descending {
		offset = *p.Index
	}

	var rows *sql.Rows
	var err error
	switch {
	case all && descending:
		rows, err = tx.query(ctx, directoryDescAll, lower, upper, p.Max)
	case all:
		rows, err = tx.query(ctx, directoryAscAll, lower, upper, p.Max, offset)
	case descending:
		rows, err = tx.query(ctx, directoryDescScoped, scope, lower, upper, p.Max)
	default:
		rows, err = tx.query(ctx, directoryAscScoped, scope, lower, upper, p.Max, offset)
	}
	if err != nil {
		return nil, fmt.Errorf("db: directory page: %w", err)
	}
	defer rows.Close()
	items := make([]Item, 0, min(p.Max, maxPreallocatedItems))
	for rows.Next() {
		var it Item
		if err := rows.Scan(&it.JID, &it.Name); err != nil {
			return nil, fmt.Errorf("db: directory page: %w", err)
		}
		items = append(items, it)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("db: directory page: %w", err)
	}
	if descending {
		// Read backwards from the upper bound to find the last Max
		// items; the page itself is always in ascending order.
		slices.Reverse(items)
	}
	return items, nil
}
