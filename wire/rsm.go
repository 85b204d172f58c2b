package wire

import (
	"encoding/xml"
	"strconv"
)

// NSRSM is the XEP-0059 Result Set Management namespace.
const NSRSM = "http://jabber.org/protocol/rsm"

// maxRSMID bounds an RSM item ID; endpoint JIDs are at most 3071 bytes and
// tool nodes are bounded by the manifest limits.
const maxRSMID = 4096

// RSMRequest is a parsed XEP-0059 <set/> in a request. A nil field was
// absent. Before pointing at "" asks for the last page.
type RSMRequest struct {
	Max    *int
	After  *string
	Before *string
	Index  *int
}

// ErrBadRSM reports a malformed <set/>; handlers answer it with bad-request.
type ErrBadRSM struct{ Reason string }

func (e ErrBadRSM) Error() string { return "rsm: " + e.Reason }

// ParseRSM reads a <set xmlns='http://jabber.org/protocol/rsm'/> element.
// It rejects duplicate or unknown children, negative or non-numeric values,
// nested markup, and requests that combine after, before and index.
func ParseRSM(set Element) (RSMRequest, error) {
	var req RSMRequest
	seen := map[string]bool{}
	for _, c := range set.Children() {
		if c.Start.Name.Space != NSRSM {
			return req, ErrBadRSM{"unexpected element in set"}
		}
		local := c.Start.Name.Local
		if seen[local] {
			return req, ErrBadRSM{"duplicate " + local}
		}
		seen[local] = true
		if len(c.Children()) > 0 {
			return req, ErrBadRSM{local + " must contain only text"}
		}
		text := c.Text()
		switch local {
		case "max", "index":
			n, err := strconv.Atoi(text)
			if err != nil || n < 0 || len(text) > 10 {
				return req, ErrBadRSM{local + " must be a non-negative integer"}
			}
			if local == "max" {
				req.Max = &n
			} else {
				req.Index = &n
			}
		case "after", "before":
			if len(text) > maxRSMID {
				return req, ErrBadRSM{local + " is too long"}
			}
			if local == "after" {
				if text == "" {
					return req, ErrBadRSM{"after must not be empty"}
				}
				req.After = &text
			} else {
				req.Before = &text
			}
		default:
			return req, ErrBadRSM{"unknown element " + local}
		}
	}
	n := 0
	for _, k := range []string{"after", "before", "index"} {
		if seen[k] {
			n++
		}
	}
	if n > 1 {
		return req, ErrBadRSM{"after, before and index are mutually exclusive"}
	}
	return req, nil
}

// FindRSM returns the parsed <set/> child of payload, if any. ok is false
// when there is none.
func FindRSM(payload Element) (req RSMRequest, ok bool, err error) {
	set, found := payload.Child(xml.Name{Space: NSRSM, Local: "set"})
	if !found {
		return req, false, nil
	}
	req, err = ParseRSM(set)
	return req, true, err
}

// RSMResult is the <set/> of a response. With no items, only the count is
// written (XEP-0059 §2.6), since empty <first/> and <last/> are invalid.
type RSMResult struct {
	First, Last string
	FirstIndex  *int
	Count       int
	HasItems    bool
}

// TokenReader implements xmlstream.Marshaler.
func (r RSMResult) TokenReader() xml.TokenReader {
	name := func(l string) xml.Name { return xml.Name{Space: NSRSM, Local: l} }
	count := TextElem(name("count"), strconv.Itoa(r.Count))
	if !r.HasItems {
		return Elem(name("set"), nil, count)
	}
	var firstAttrs []xml.Attr
	if r.FirstIndex != nil {
		firstAttrs = []xml.Attr{Attr("index", strconv.Itoa(*r.FirstIndex))}
	}
	return Elem(name("set"), nil,
		Elem(name("first"), firstAttrs, Text(r.First)),
		TextElem(name("last"), r.Last),
		count,
	)
}

// DefaultPageSize is the page size when a request has no <max/>.
const DefaultPageSize = 50

// PageSize is the page size to serve for r under the cap pageMax (a cap of
// 0 or less means DefaultPageSize): a larger <max/> is clamped, and no
// <max/> means DefaultPageSize, or the cap if smaller.
func (r RSMRequest) PageSize(pageMax int) int {
	if pageMax <= 0 {
		pageMax = DefaultPageSize
	}
	if r.Max == nil {
		return min(pageMax, DefaultPageSize)
	}
	return min(*r.Max, pageMax)
}

// Result is the <set/> answering r for a page whose items run from first
// to last (n of them) out of count visible ones. The first item's index is
// given when the request paged by <index/>.
func (r RSMRequest) Result(count, n int, first, last string) *RSMResult {
	set := &RSMResult{Count: count}
	if n > 0 {
		set.HasItems = true
		set.First, set.Last = first, last
		if r.Index != nil {
			i := *r.Index
			set.FirstIndex = &i
		}
	}
	return set
}
