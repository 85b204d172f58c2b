package hotpath

import (
	"encoding/xml"
	"testing"

	"agentgw/db"
	"agentgw/policy"
)

// source is a Source whose State the test moves.
type source struct {
	st State
	ok bool
}

func (s *source) HotState() (State, bool) { return s.st, s.ok }

// TestMemoContract: an answer is kept only from a read's second ask, is
// given only under the State it was read under, and one read under a
// State that has since moved is never given: it starts a memo of its own
// under its old State. With no State to be had the memo is not used.
func TestMemoContract(t *testing.T) {
	var m Memo[string]
	src := &source{st: StateOf(db.View{}, &policy.Policy{}, nil, nil), ok: true}
	k := Key{From: "a@x/r", To: "e@agents.x", Name: xml.Name{Space: "http://jabber.org/protocol/disco#info", Local: "query"}}

	if _, keep := m.Begin(k, src); keep {
		t.Fatal("kept at the first ask")
	}
	p, keep := m.Begin(k, src)
	if !keep {
		t.Fatal("not kept at the second ask")
	}
	answer := "info"
	p.Keep(&answer)
	if e, ok := m.Lookup(k, src); !ok || *e != "info" {
		t.Fatalf("Lookup under the same State: %v %v", e, ok)
	}

	// The State moves on (a reload of the policy): the answer is stale.
	old := src.st
	src.st = StateOf(db.View{}, &policy.Policy{}, nil, nil)
	if _, ok := m.Lookup(k, src); ok {
		t.Fatal("an answer given under a State it was not read under")
	}

	// A read begun under the old State and kept after the move is not
	// given under the new one.
	src.st = old
	p, _ = m.Begin(k, src)
	src.st = StateOf(db.View{}, &policy.Policy{}, nil, nil)
	late := "late"
	p.Keep(&late)
	if _, ok := m.Lookup(k, src); ok {
		t.Fatal("an answer read under an old State given under the new one")
	}

	// No State to be had: nothing is given or kept.
	src.ok = false
	if _, ok := m.Lookup(k, src); ok {
		t.Fatal("Lookup without a State")
	}
	if _, keep := m.Begin(k, src); keep {
		t.Fatal("Begin without a State")
	}

	m.Drop()
	if m.Len() != 0 {
		t.Fatalf("%d answers after Drop", m.Len())
	}
	// A zero Pending keeps nothing.
	Pending[string]{}.Keep(&answer)
	if m.Len() != 0 {
		t.Fatal("a zero Pending kept an answer")
	}
}
