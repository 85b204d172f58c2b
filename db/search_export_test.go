package db

import "agentgw/db/internal/searchtext"

// Test hooks of the search index: compiled only into this package's tests.

// CountExactLimit and CountSampleSize are the search count tunables.
const (
	CountExactLimit = countExactLimit
	CountSampleSize = countSampleSize
)

// SearchQueries are the search page and count queries, for plan checks.
var SearchQueries = map[string]string{
	"gram-counts":  searchGramCounts,
	"count-all":    searchCountAll,
	"count-sample": searchCountSample,
	"asc-all":      searchAscAll,
	"desc-all":     searchDescAll,
	"count-scope":  searchCountScoped,
	"asc-scope":    searchAscScoped,
	"desc-scope":   searchDescScoped,
}

// SearchText and TextGrams expose what the triggers index.
var (
	SearchText = searchtext.Text
	TextGrams  = searchtext.Grams
)

// SQLSearchOnly makes Search ask SQLite even where the in-memory index
// would answer (search_mem.go), so tests can compare the two.
func SQLSearchOnly(s *Store) { s.sqlSearchOnly = true }

// MemRecheck is how long the in-memory search index is trusted without a
// check, absent writes through the same Store.
const MemRecheck = memRecheck
