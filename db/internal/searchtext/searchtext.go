// Package searchtext is the text rule of the store's search index: how
// an endpoint's localpart, name and title are folded (Fold) and cut into
// the grams the index posts, in Go for the store and the PostgreSQL
// engine, and as the SQL functions SQLite's triggers call.
package searchtext

import (
	"database/sql/driver"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"unicode"

	"golang.org/x/text/cases"
	"golang.org/x/text/unicode/norm"
	sqlite "modernc.org/sqlite"
)

const (
	// Separator joins the folded fields of one endpoint in search_text.
	// Fold maps control characters to spaces, so neither a field nor a
	// query can contain it.
	Separator = "\x1f"

	// MaxGram is the length, in characters, of the longest indexed gram.
	MaxGram = 3
)

// The SQL functions the search index triggers of the SQLite schema call. They are registered
// with the driver, so every connection this process opens has them.
const (
	sqlFuncSearchText  = "agentgw_search_text"
	sqlFuncSearchGrams = "agentgw_search_grams"
)

func init() {
	sqlite.MustRegisterDeterministicScalarFunction(sqlFuncSearchText, 3, sqlSearchText)
	sqlite.MustRegisterDeterministicScalarFunction(sqlFuncSearchGrams, 1, sqlSearchGrams)
}

// Fold is the folding that search matching compares under, applied
// both to the indexed fields and to the query: compatibility decomposition,
// full Unicode case folding (so "Straße" matches "STRASSE"), then NFKC, so
// that composed and decomposed accents, full-width letters and ligatures
// match their plain forms. Accents are kept: "meteo" does not match
// "Météo". Control characters become spaces, format characters and
// variation selectors are dropped, runs of white space become one space,
// and leading and trailing space is trimmed.
//
// Case folding is not locale-aware: the Turkish dotted capital I folds to
// "i" followed by a combining dot. Cherokee folds to its capital letters,
// as Unicode's CaseFolding.txt specifies (golang.org/x/text folds it the
// other way, which is not idempotent).
func Fold(s string) string {
	c := caserPool.Get().(*cases.Caser)
	folded := c.String(norm.NFKD.String(strings.ToValidUTF8(s, "\uFFFD")))
	caserPool.Put(c)
	folded = norm.NFKC.String(folded)

	var b strings.Builder
	b.Grow(len(folded))
	space := false
	for _, r := range folded {
		switch {
		case unicode.IsControl(r) || unicode.IsSpace(r):
			space = b.Len() > 0
			continue
		case unicode.Is(unicode.Cf, r) || unicode.Is(unicode.Variation_Selector, r):
			continue
		case unicode.Is(unicode.Cherokee, r):
			r = unicode.ToUpper(r)
		}
		if space {
			b.WriteByte(' ')
			space = false
		}
		b.WriteRune(r)
	}
	return b.String()
}

// caserPool holds case folders: a cases.Caser keeps state and must not be
// shared between goroutines.
var caserPool = sync.Pool{New: func() any {
	c := cases.Fold()
	return &c
}}

// Text is what search_text stores for an endpoint: its folded
// localpart, name and title, without empty or repeated ones, joined by
// Separator.
func Text(jid, name, title string) string {
	local, _, _ := strings.Cut(jid, "@")
	fields := make([]string, 0, 3)
	for _, f := range []string{local, name, title} {
		if f = Fold(f); f != "" && !slices.Contains(fields, f) {
			fields = append(fields, f)
		}
	}
	return strings.Join(fields, Separator)
}

// Grams returns the distinct substrings of one to MaxGram characters
// of each field of a search_text value, in first-seen order.
func Grams(text string) []string {
	seen := make(map[string]struct{})
	var grams []string
	for _, field := range strings.Split(text, Separator) {
		runes := []rune(field)
		for n := 1; n <= MaxGram; n++ {
			for i := 0; i+n <= len(runes); i++ {
				g := string(runes[i : i+n])
				if _, dup := seen[g]; !dup {
					seen[g] = struct{}{}
					grams = append(grams, g)
				}
			}
		}
	}
	return grams
}

// QueryGrams returns the grams that every match of a folded query must
// contain: the query itself if it is at most MaxGram characters long, or
// else its distinct trigrams.
func QueryGrams(folded string) []string {
	runes := []rune(folded)
	if len(runes) <= MaxGram {
		return []string{folded}
	}
	var grams []string
	for i := 0; i+MaxGram <= len(runes); i++ {
		if g := string(runes[i : i+MaxGram]); !slices.Contains(grams, g) {
			grams = append(grams, g)
		}
	}
	return grams
}

// sqlSearchText is agentgw_search_text(jid, name, title).
func sqlSearchText(_ *sqlite.FunctionContext, args []driver.Value) (driver.Value, error) {
	return Text(sqlString(args[0]), sqlString(args[1]), sqlString(args[2])), nil
}

// sqlSearchGrams is agentgw_search_grams(text): Grams as a JSON array.
func sqlSearchGrams(_ *sqlite.FunctionContext, args []driver.Value) (driver.Value, error) {
	b, err := json.Marshal(Grams(sqlString(args[0])))
	if err != nil {
		return nil, err
	}
	return string(b), nil
}

// sqlString reads a TEXT argument; NULL and other types read as "".
func sqlString(v driver.Value) string {
	switch v := v.(type) {
	case string:
		return v
	case []byte:
		return string(v)
	}
	return ""
}
