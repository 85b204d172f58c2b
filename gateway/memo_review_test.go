package gateway_test

import (
	"agentgw/config"
	"agentgw/gateway"
	"agentgw/wire"
	"encoding/xml"
	"fmt"
	"runtime"
	"slices"
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

// memoPinned sends n distinct kept reads, each twice (an answer is kept
// at its second read, hotpath.Memo.Begin), each stanza carrying about junk bytes
// the answer does not depend on, and returns how much more heap is live
// afterwards. stanza(i, junk) is the IQ's XML.
func memoPinned(t *testing.T, e *env, n int, stanza func(i int, junk string) string) uint64 {
	t.Helper()
	junk := strings.Repeat("j", 64<<10)
	before := heapAfterGC()
	for i := range 2 * n {
		e.srv.write(stanza(i/2, junk))
		id := fmt.Sprintf("pin%d", i/2)
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
	t.Logf("%d reads: %d KiB more live heap", n, (after-before)>>10)
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
	e := startUnlimited(t) // 400 reads of one sender
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
	e := startUnlimited(t) // 400 reads of one sender
	const n = 200
	grew := memoPinned(t, e, n, func(i int, junk string) string {
		return fmt.Sprintf(`<iq xmlns='jabber:component:accept' type='get' id='pin%d' from='%s' to='nobody%d@%s' x='%s'>`+
			`<query xmlns='http://jabber.org/protocol/disco#info'/></iq>`, i, mall, i, domain, junk)
	})
	if grew > 4<<20 {
		t.Errorf("%d kept reads keep %d KiB alive", n, grew>>10)
	}
}

// TestMemoErrorAsReplyError: a kept error is the stanza replyError writes
// for the same read, element for element and namespace for namespace (the
// <error/> in jabber:component:accept), whatever the path that answers a
// read the memo may not keep.
func TestMemoErrorAsReplyError(t *testing.T) {
	e := start(t, "")
	to := "nobody@" + domain
	kept, plain := keptAndPlain(t, e, mall, to)
	if got, want := namesOf(kept), namesOf(plain); got != want {
		t.Errorf("kept error:\n%s\nreplyError:\n%s", got, want)
	}
}

// namesOf lists el's tokens with their namespaces and attributes, but the
// IQ's id.
func namesOf(el wire.Element) string {
	var b strings.Builder
	r := el.Reader()
	for {
		tok, err := r.Token()
		if err != nil {
			break
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			fmt.Fprintf(&b, "<{%s}%s", tok.Name.Space, tok.Name.Local)
			attrs := slices.Clone(tok.Attr)
			slices.SortFunc(attrs, func(a, c xml.Attr) int { return strings.Compare(a.Name.Local, c.Name.Local) })
			for _, a := range attrs {
				// Declarations are said by the names; the id differs.
				if a.Name.Local == "id" && tok.Name.Local == "iq" || a.Name.Space == "xmlns" || a.Name.Space == "" && a.Name.Local == "xmlns" {
					continue
				}
				fmt.Fprintf(&b, " {%s}%s=%q", a.Name.Space, a.Name.Local, a.Value)
			}
			b.WriteString(">\n")
		case xml.EndElement:
			fmt.Fprintf(&b, "</{%s}%s>\n", tok.Name.Space, tok.Name.Local)
		case xml.CharData:
			fmt.Fprintf(&b, "%q\n", string(tok))
		}
	}
	return b.String()
}

// TestMemoDoesNotKeepOldIndexes: a kept answer made stale by a change to
// the endpoints must not keep the store's in-memory index of before the
// change alive: the index is the whole directory (megabytes at thousands
// of endpoints), and each stale entry that is not asked again held its
// own, up to hotpath.MaxEntries of them.
func TestMemoDoesNotKeepOldIndexes(t *testing.T) {
	e := start(t, "")
	// About 1.5 MiB of index: 100 endpoints with 8 KiB titles.
	title := strings.Repeat("t", 8<<10)
	for i := range 100 {
		register(t, e.store, fmt.Sprintf("big%03d", i), title, true)
	}
	e.srv.iq(mall, "nobody@"+domain, "get", discoInfo) // builds the index
	before := heapAfterGC()
	const changes = 20
	for i := range changes {
		register(t, e.store, fmt.Sprintf("new%03d", i), "New", true)
		to := fmt.Sprintf("nobody%d@%s", i, domain)
		// A worker sees the change, the fast path keeps the answer, the
		// memo gives it: a few reads, as the store's recheck allows.
		for n := 0; ; n++ {
			if _, hit := memoRead(e, mall, to, discoInfo); hit {
				break
			}
			if n == 20 {
				t.Fatalf("change %d: the answer was not kept", i)
			}
		}
	}
	grew := int64(heapAfterGC()) - int64(before)
	t.Logf("%d changes: %d KiB more live heap", changes, grew>>10)
	if grew > 6<<20 {
		t.Errorf("after %d changes the memo keeps %d KiB more alive", changes, grew>>10)
	}
}

// TestMemoDomainLimit: kept answers spend the domain's budget as others
// do: two accounts of one domain, each repeating a kept read, get
// domain_rate_burst answers between them; the gateway's own domain is
// never limited, kept or not.
func TestMemoDomainLimit(t *testing.T) {
	const burst = 6
	e := startWith(t, func(cfg *config.Config) { cfg.DomainRateLimit, cfg.DomainRateBurst = 0.01, burst })
	to := "nobody@" + domain
	e.srv.iq(carol, to, "get", discoInfo) // builds the store's index
	answered, kept := 0, 0
	for i := range 4 * burst {
		from := []string{"u1@flood.example/r", "u2@flood.example/r"}[i%2]
		el, hit := memoRead(e, from, to, discoInfo)
		switch condition(el) {
		case "item-not-found":
			answered++
			if hit {
				kept++
			}
		case "resource-constraint":
		default:
			t.Fatalf("unexpected answer %s", marshal(t, el))
		}
	}
	// Each account's first two reads are answered by the fast path
	// (hotpath.Memo.Begin).
	if answered != burst || kept != burst-4 {
		t.Errorf("%d answered (%d from the memo); want %d (%d)", answered, kept, burst, burst-4)
	}
	for i := range 3 * burst {
		if el, _ := memoRead(e, domain, to, discoInfo); condition(el) != "item-not-found" {
			t.Fatalf("the gateway's own domain, read %d: %s", i, marshal(t, el))
		}
	}
}

// TestMemoResultAsReplyResult: a kept result, to a sender whose resource
// needs escaping, is the stanza the unkept path writes, with the id sent.
// keptAndPlain returns the answer to from's disco#info of to from the
// memo, and the answer to the same read kept out of the memo by an
// attribute the handler ignores (other='1').
func keptAndPlain(t *testing.T, e *env, from, to string) (kept, plain wire.Element) {
	t.Helper()
	plain = e.srv.iq(from, to, "get", `<query xmlns='http://jabber.org/protocol/disco#info' other='1'/>`)
	// Kept at the second read (hotpath.Memo.Begin), given at the third, unless the
	// state the memo is tagged with moved in between (the store's 250 ms
	// recheck, which a busy machine can straddle): then it starts over,
	// so a few more reads are allowed, counted, not timed.
	for i := range 8 {
		var hit bool
		kept, hit = memoRead(e, from, to, discoInfo)
		if hit && i >= 2 {
			return kept, plain
		}
	}
	t.Fatal("the answer was not kept")
	return kept, plain
}

// TestMemoResultAsReplyResult: a kept result to a resource that needs
// escaping is the stanza the unkept path writes, addressed back to it.
func TestMemoResultAsReplyResult(t *testing.T) {
	e := start(t, "")
	register(t, e.store, "a001", "Agent One", true)
	to := "a001@" + domain
	from := `carol@remote.example/l"a<p&t'op`
	fromAttr := `carol@remote.example/l&quot;a&lt;p&amp;t&apos;op`
	e.srv.iq(fromAttr, to, "get", discoInfo) // builds the store's index
	kept, plain := keptAndPlain(t, e, fromAttr, to)
	if got, want := namesOf(kept), namesOf(plain); got != want {
		t.Errorf("kept result:\n%s\nunkept:\n%s", got, want)
	}
	if got := attr(kept, "to"); got != from {
		t.Errorf("to %q, want %q", got, from)
	}
}

// TestMemoNoID: a get without an id (RFC 6120 requires one; a server may
// still pass it on) is answered as replyError answers it, which gives the
// error an id of its own (mellium), every time: the memo, which writes a
// kept answer around the id received, wrote id=”.
func TestMemoNoID(t *testing.T) {
	e := start(t, "")
	to := "nobody@" + domain
	e.srv.iq(mall, to, "get", discoInfo) // builds the store's index
	before := gateway.MemoAnswers()
	for i, p := range []string{`<query xmlns='http://jabber.org/protocol/disco#info' other='1'/>`, discoInfo, discoInfo} {
		e.srv.write(`<iq xmlns='jabber:component:accept' type='get' from='` + mall + `' to='` + to + `'>` + p + `</iq>`)
		el := e.srv.next()
		if id, _ := el.AttrValue("id"); id == "" || condition(el) != "item-not-found" {
			t.Errorf("answer %d: %s", i, marshal(t, el))
		}
	}
	if n := gateway.MemoAnswers() - before; n != 0 {
		t.Errorf("%d answered from the memo", n)
	}
}
