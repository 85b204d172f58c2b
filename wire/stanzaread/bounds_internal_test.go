package stanzaread

import (
	"bufio"
	"encoding/xml"
	"fmt"
	"strings"
	"testing"
)

// The name cache keeps short names only: distinct long names do not stay
// in the session's memory.
func TestNameCacheBounded(t *testing.T) {
	var b strings.Builder
	b.WriteString("<iq>")
	for i := 0; i < 5000; i++ {
		fmt.Fprintf(&b, "<%s%d/>", strings.Repeat("n", 4000), i)
	}
	b.WriteString("</iq>")
	start := xml.StartElement{Name: xml.Name{Space: "stream", Local: "stream"}}
	r := New(bufio.NewReader(strings.NewReader(b.String())), start, 200_000, 1<<30)
	if _, err := r.Next(); err != nil {
		t.Fatal(err)
	}
	total := 0
	for k := range r.names {
		total += len(k)
	}
	if total > maxCached*maxCachedName {
		t.Fatalf("name cache holds %d bytes, want at most %d", total, maxCached*maxCachedName)
	}
}
