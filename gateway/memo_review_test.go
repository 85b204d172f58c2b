package gateway_test

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
)

// heapAfterGC is the live heap after two collections.
func heapAfterGC() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// memoPinned sends n distinct kept reads, each stanza carrying about
// junk bytes the answer does not depend on, and returns how much more heap
// is live afterwards. stanza(i, junk) is the IQ's XML.
func memoPinned(t *testing.T, e *env, n int, stanza func(i int, junk string) string) uint64 {
	t.Helper()
	junk := strings.Repeat("j", 64<<10)
	before := heapAfterGC()
	for i := range n {
		e.srv.write(stanza(i, junk))
		id := fmt.Sprintf("pin%d", i)
		for {
			el := e.srv.next()
			if v, _ := el.AttrValue("id"); v == id {
				if condition(el) != "item-not-found" {
					t.Fatalf("read %d: %s", i, marshal(t, el))
				}
				break
			}
		}
	}
	after := heapAfterGC()
	if after < before {
		return 0
	}
	return after - before
}

// TestMemoKeyDoesNotPinStanza: a kept answer's key (the node, the
// payload's namespace) must not keep alive the attribute text of the
// stanza it was read from. stanzaread hands out an element's attribute
// values as substrings of one string, so a key made of them holds every
// other attribute of that element too, here a namespace declaration of
// 64 KiB: 200 such reads held 12.5 MiB, where docs/limits.md promises
// about half a megabyte for a full memo.
func TestMemoKeyDoesNotPinStanza(t *testing.T) {
	e := start(t, "")
	const n = 200
	grew := memoPinned(t, e, n, func(i int, junk string) string {
		return fmt.Sprintf(`<iq xmlns='jabber:component:accept' type='get' id='pin%d' from='%s' to='nobody@%s'>`+
			`<query xmlns='http://jabber.org/protocol/disco#info' xmlns:j='%s' node='n%d'/></iq>`, i, mall, domain, junk, i)
	})
	if grew > 4<<20 {
		t.Errorf("%d kept reads keep %d KiB alive", n, grew>>10)
	}
}

// TestMemoAddressesDoNotPinStanza: the same for the IQ's own attributes:
// the memo's from and to, and the read loop's parsed-address cache (whose
// keys are the attribute text too), must not hold an extra attribute of
// the IQ.
func TestMemoAddressesDoNotPinStanza(t *testing.T) {
	e := start(t, "")
	const n = 200
	grew := memoPinned(t, e, n, func(i int, junk string) string {
		return fmt.Sprintf(`<iq xmlns='jabber:component:accept' type='get' id='pin%d' from='%s' to='nobody%d@%s' x='%s'>`+
			`<query xmlns='http://jabber.org/protocol/disco#info'/></iq>`, i, mall, i, domain, junk)
	})
	if grew > 4<<20 {
		t.Errorf("%d kept reads keep %d KiB alive", n, grew>>10)
	}
}
