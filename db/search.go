package db

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
	"unicode/utf8"

	"agentgw/db/internal/searchtext"
)

// The search index behind XEP-0055 (package search): a case-insensitive
// substring test on folded text (SearchFold of each active endpoint's
// localpart, name and title in search_text), answered from n-gram postings
// (search_gram, ordered by JID, so a page is a range seek on one gram) and
// counted from search_gram_count. Triggers on active_endpoint keep the
// three tables in step, folding with this binary's Go functions; changing
// SearchFold needs a migration that rebuilds them. The design, its costs
// and the one estimated count: docs/store.md, "The search index".

// Tunables of the search index.
const (
	// countExactLimit is the largest number of postings of a query's
	// rarest trigram that are checked one by one to count its matches
	// exactly (about 0.4 µs each).
	countExactLimit = 500

	// countSampleSize is how many postings are checked to estimate the
	// count when there are more than countExactLimit.
	countSampleSize = 250
)

// The search queries. Unscoped pages walk one gram's postings in jid order
// from a bound and stop after LIMIT matches, checking each candidate in
// SQLite (about 0.4 µs each; handing a row to Go costs more than that, so
// matches are counted in SQL rather than streamed). Scoped ones drive from
// the requester's JID list, like the directory's, and cost its length.
const (
	searchGramCounts = `SELECT g.value, coalesce(c.n, 0)
		FROM json_each(?) AS g LEFT JOIN search_gram_count AS c ON c.gram = g.value`

	searchCountAll = `SELECT count(*)
		FROM search_gram AS d CROSS JOIN search_text AS t ON t.jid = d.jid
		WHERE d.gram = ? AND instr(t.folded, ?) > 0`

	searchCountSample = `SELECT count(*)
		FROM (SELECT jid FROM search_gram WHERE gram = ? ORDER BY jid LIMIT ?) AS d
		CROSS JOIN search_text AS t ON t.jid = d.jid
		WHERE instr(t.folded, ?) > 0`

	searchAscAll = `SELECT d.jid, t.display_name
		FROM search_gram AS d CROSS JOIN search_text AS t ON t.jid = d.jid
		WHERE d.gram = ? AND d.jid > ? AND d.jid < ? AND instr(t.folded, ?) > 0
		ORDER BY d.jid LIMIT ? OFFSET ?`

	searchDescAll = `SELECT d.jid, t.display_name
		FROM search_gram AS d CROSS JOIN search_text AS t ON t.jid = d.jid
		WHERE d.gram = ? AND d.jid > ? AND d.jid < ? AND instr(t.folded, ?) > 0
		ORDER BY d.jid DESC LIMIT ?`

	searchCountScoped = `SELECT count(*)
		FROM json_each(?) AS s CROSS JOIN search_text AS t ON t.jid = s.value
		WHERE instr(t.folded, ?) > 0`

	searchAscScoped = `SELECT t.jid, t.display_name
		FROM json_each(?) AS s CROSS JOIN search_text AS t ON t.jid = s.value
		WHERE s.value > ? AND s.value < ? AND instr(t.folded, ?) > 0
		ORDER BY t.jid LIMIT ? OFFSET ?`

	searchDescScoped = `SELECT t.jid, t.display_name
		FROM json_each(?) AS s CROSS JOIN search_text AS t ON t.jid = s.value
		WHERE s.value > ? AND s.value < ? AND instr(t.folded, ?) > 0
		ORDER BY t.jid DESC LIMIT ?`
)

// SearchPage is one page of search results and the number of visible
// matches in total.
type SearchPage struct {
	Items []Item
	Count int
	// CountEstimated reports that Count is an estimate (see Search).
	CountEstimated bool
}

// Search returns one page of the active endpoints visible in sc whose
// localpart, manifest name or title contains query, compared after
// SearchFold, ordered by JID octetwise; p has the same meaning as for
// Directory. An empty (or all-space) query matches every visible endpoint,
// exactly as Directory lists them. The count and the page come from one
// snapshot. Count is exact, except for a long query of a requester who
// sees everything, whose count may be sampled (CountEstimated is set).
// A non-empty query is answered from memory when the directory has at
// most maxMemIndexed endpoints (search_mem.go), with the same answers.
func (s *Store) Search(ctx context.Context, sc Scope, query string, p Page) (SearchPage, error) {
	folded := SearchFold(query)
	if folded == "" {
		page, err := s.Directory(ctx, sc, p)
		if err != nil {
			return SearchPage{}, err
		}
		return SearchPage{Items: page.Items, Count: page.Count}, nil
	}
	if !s.sqlSearchOnly {
		idx, err := s.memIndexFor(ctx)
		if err != nil {
			return SearchPage{}, err
		}
		if !idx.tooBig {
			return idx.search(sc, folded, p), nil
		}
	}
	var scope string // JSON array of the visible JIDs, unless sc.All
	if !sc.All {
		jids := visibleJIDs(sc.JIDs)
		if len(jids) == 0 {
			return SearchPage{}, nil
		}
		b, err := json.Marshal(jids)
		if err != nil {
			return SearchPage{}, fmt.Errorf("db: search: %w", err)
		}
		scope = string(b)
	}

	tx, err := s.beginRead(ctx)
	if err != nil {
		return SearchPage{}, fmt.Errorf("db: search: %w", err)
	}
	defer tx.rollback()
	var page SearchPage
	if sc.All {
		page, err = searchAll(ctx, tx, folded, p)
	} else {
		page, err = searchScoped(ctx, tx, scope, folded, p)
	}
	if err != nil {
		return SearchPage{}, err
	}
	if err := tx.commit(); err != nil {
		return SearchPage{}, fmt.Errorf("db: search: %w", err)
	}
	return page, nil
}

// searchScoped searches the JIDs of scope, a JSON array, one primary-key
// probe per JID.
func searchScoped(ctx context.Context, tx *txn, scope, folded string, p Page) (SearchPage, error) {
	var page SearchPage
	if err := tx.queryRow(ctx, searchCountScoped, scope, folded).Scan(&page.Count); err != nil {
		return SearchPage{}, fmt.Errorf("db: search count: %w", err)
	}
	if p.Max <= 0 || page.Count == 0 {
		return page, nil
	}
	lower, upper, descending, offset := pageBounds(p)
	var rows *sql.Rows
	var err error
	if descending {
		rows, err = tx.query(ctx, searchDescScoped, scope, lower, upper, folded, p.Max)
	} else {
		rows, err = tx.query(ctx, searchAscScoped, scope, lower, upper, folded, p.Max, offset)
	}
	if err != nil {
		return SearchPage{}, fmt.Errorf("db: search page: %w", err)
	}
	if page.Items, err = scanItems(rows, p.Max, descending); err != nil {
		return SearchPage{}, fmt.Errorf("db: search page: %w", err)
	}
	return page, nil
}

// searchAll searches every active endpoint through the gram index.
func searchAll(ctx context.Context, tx *txn, folded string, p Page) (SearchPage, error) {
	grams := searchtext.QueryGrams(folded)
	b, err := json.Marshal(grams)
	if err != nil {
		return SearchPage{}, fmt.Errorf("db: search: %w", err)
	}
	driver, postings, err := rarestGram(ctx, tx, string(b))
	if err != nil || postings == 0 {
		return SearchPage{}, err
	}

	var page SearchPage
	switch {
	case utf8.RuneCountInString(folded) <= searchtext.MaxGram:
		// The query is a gram: every posting is a match.
		page.Count = postings
	case postings <= countExactLimit:
		err = tx.queryRow(ctx, searchCountAll, driver, folded).Scan(&page.Count)
	default:
		var hits int
		err = tx.queryRow(ctx, searchCountSample, driver, countSampleSize, folded).Scan(&hits)
		page.Count = (hits*postings + countSampleSize/2) / countSampleSize
		page.CountEstimated = true
	}
	if err != nil {
		return SearchPage{}, fmt.Errorf("db: search count: %w", err)
	}
	if p.Max <= 0 || (page.Count == 0 && !page.CountEstimated) {
		return page, nil
	}

	lower, upper, descending, offset := pageBounds(p)
	limit := p.Max
	if p.After == nil && !descending && !page.CountEstimated {
		// A page from the start can stop at the last match: with few
		// matches among many candidates, the walk ends early.
		limit = min(limit, page.Count-offset)
		if limit <= 0 {
			return page, nil
		}
	}
	var rows *sql.Rows
	if descending {
		rows, err = tx.query(ctx, searchDescAll, driver, lower, upper, folded, limit)
	} else {
		rows, err = tx.query(ctx, searchAscAll, driver, lower, upper, folded, limit, offset)
	}
	if err != nil {
		return SearchPage{}, fmt.Errorf("db: search page: %w", err)
	}
	if page.Items, err = scanItems(rows, limit, descending); err != nil {
		return SearchPage{}, fmt.Errorf("db: search page: %w", err)
	}
	// An extrapolated count must not contradict the page in hand.
	page.Count = max(page.Count, len(page.Items))
	return page, nil
}

// rarestGram returns the gram of grams (a JSON array) with the fewest
// postings, and that number; 0 means some gram, and so the query, occurs
// nowhere.
func rarestGram(ctx context.Context, tx *txn, grams string) (string, int, error) {
	rows, err := tx.query(ctx, searchGramCounts, grams)
	if err != nil {
		return "", 0, fmt.Errorf("db: search grams: %w", err)
	}
	defer rows.Close()
	best, fewest := "", -1
	for rows.Next() {
		var g string
		var n int
		if err := rows.Scan(&g, &n); err != nil {
			return "", 0, fmt.Errorf("db: search grams: %w", err)
		}
		if fewest < 0 || n < fewest {
			best, fewest = g, n
		}
	}
	if err := rows.Err(); err != nil {
		return "", 0, fmt.Errorf("db: search grams: %w", err)
	}
	return best, max(fewest, 0), nil
}

// pageBounds translates p into the bounds the page queries take, as
// directoryItems does.
func pageBounds(p Page) (lower, upper string, descending bool, offset int) {
	lower, upper = noLowerBound, noUpperBound
	if p.After != nil {
		lower = *p.After
	}
	descending = p.Before != nil
	if descending && *p.Before != "" {
		upper = *p.Before
	}
	if p.Index != nil && *p.Index > 0 && !descending {
		offset = *p.Index
	}
	return lower, upper, descending, offset
}

// scanItems reads (jid, display_name) rows, closing them, in ascending order.
func scanItems(rows *sql.Rows, limit int, descending bool) ([]Item, error) {
	defer rows.Close()
	items := make([]Item, 0, min(limit, maxPreallocatedItems))
	for rows.Next() {
		var it Item
		if err := rows.Scan(&it.JID, &it.Name); err != nil {
			return nil, err
		}
		items = append(items, it)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if descending {
		slices.Reverse(items)
	}
	return items, nil
}

// SearchFold is the folding that search matching compares under, applied
// both to the indexed fields and to the query (searchtext.Fold).
func SearchFold(s string) string { return searchtext.Fold(s) }
