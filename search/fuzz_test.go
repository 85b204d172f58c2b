package search_test

import (
	"testing"

	"agentgw/internal/fuzztest"
	"agentgw/search"
)

// FuzzParseRequest covers XEP-0055 search requests: legacy fields and
// XEP-0004 form submissions, with RSM.
func FuzzParseRequest(f *testing.F) {
	fuzztest.Element(f, nil, search.ParseRequest)
}

// FuzzParseFields covers the search-fields answer a client parses.
func FuzzParseFields(f *testing.F) {
	fuzztest.Element(f, nil, search.ParseFields)
}

// FuzzParseResult covers search results (legacy items or a multi-item
// form, with RSM) a client parses.
func FuzzParseResult(f *testing.F) {
	fuzztest.Element(f, nil, search.ParseResult)
}
