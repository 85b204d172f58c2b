package db

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
	SearchText = searchText
	TextGrams  = textGrams
)
