// Package hotpath holds the gateway's hot-path caches, whose contract
// with the router is in their types: the read loop's memo of kept answers
// (Memo), keyed by the read (Key) and tagged with everything an answer may
// depend on outside the stanza (State); and the built endpoint disco#info
// answers (Infos), keyed by the endpoint's version and features.
//
// A kept answer is given only under the State it was read under: Lookup
// compares it with the State now, and an answer can be kept only through
// a Pending, which Begin makes by reading the State before the answer is
// computed, so a change that lands meanwhile only makes it stale. A State
// is made only of its four inputs (StateOf); a handler whose answer may
// be kept depends on nothing else (gateway/route.go, fromMemory).
package hotpath

import (
	"encoding/xml"
	"hash/maphash"
	"strings"
	"sync/atomic"

	"agentgw/chat"
	"agentgw/db"
	"agentgw/policy"
	"agentgw/taskd"
)

// MaxEntries bounds the memo of one stream: past it the memo starts over.
const MaxEntries = 256

// Key is what a hot read's answer depends on in the stanza: its addresses
// as received and its payload's name and node. Only gets are kept.
type Key struct {
	From, To string
	Name     xml.Name
	Node     string
}

// State is what an answer depends on outside the stanza: the store's
// in-memory index (db.View, which moves with every change to the
// endpoints, by this process or another within the store's 250 ms
// recheck), the policy, and the task and chat services, whose endpoint
// sets are fixed for their lifetime. The state only moves on, so once it
// has, every kept answer is stale.
type State struct {
	view   db.View
	policy *policy.Policy
	tasks  *taskd.Service
	chat   *chat.Service
}

// StateOf is the State of these inputs, the only ones a kept answer may
// depend on besides its Key.
func StateOf(view db.View, pol *policy.Policy, tasks *taskd.Service, chat *chat.Service) State {
	return State{view: view, policy: pol, tasks: tasks, chat: chat}
}

// Source gives the State answers are read from now, or false when it
// cannot be had without the database (db.ErrWouldBlock): the memo is then
// not consulted at all.
type Source interface {
	HotState() (State, bool)
}

// Memo is one stream's kept answers, of type E, under one State. Only the
// read loop reads and writes it; Drop (the idle release) may run on any
// goroutine. The zero Memo is empty and ready to use.
type Memo[E any] struct {
	// t is nil until the first answer is kept and after Drop.
	t    atomic.Pointer[table[E]]
	seen seen
}

// table is the answers kept under state.
type table[E any] struct {
	state State
	m     map[Key]*E
}

// Lookup returns the answer kept for k if it was read under the State src
// gives now.
func (m *Memo[E]) Lookup(k Key, src Source) (*E, bool) {
	t := m.t.Load()
	if t == nil {
		return nil, false
	}
	e, ok := t.m[k]
	if !ok {
		return nil, false
	}
	if st, ok := src.HotState(); !ok || t.state != st {
		return nil, false
	}
	return e, true
}

// Begin records the read of k, before its answer is computed, and reports
// whether that answer is to be kept: only a read asked before is (most
// are asked once), and only when src gives the State. The Pending holds
// the State read now.
func (m *Memo[E]) Begin(k Key, src Source) (Pending[E], bool) {
	if !m.seen.again(k) {
		return Pending[E]{}, false
	}
	st, ok := src.HotState()
	if !ok {
		return Pending[E]{}, false
	}
	return Pending[E]{m: m, k: k, state: st}, true
}

// Pending is a read whose answer may be kept (Begin).
type Pending[E any] struct {
	m     *Memo[E]
	k     Key
	state State
}

// Keep keeps e as the answer to the read, under the State read by Begin.
// A memo under another State, or full, starts over.
func (p Pending[E]) Keep(e *E) {
	if p.m == nil {
		return
	}
	// The key's strings are substrings of the attribute text of the
	// stanza read (stanzaread), which holds every other attribute of its
	// element too: kept, they are copied.
	k := Key{From: strings.Clone(p.k.From), To: strings.Clone(p.k.To), Node: strings.Clone(p.k.Node),
		Name: xml.Name{Space: strings.Clone(p.k.Name.Space), Local: strings.Clone(p.k.Name.Local)}}
	t := p.m.t.Load()
	if t == nil || t.state != p.state || len(t.m) >= MaxEntries && t.m[k] == nil {
		t = &table[E]{state: p.state, m: make(map[Key]*E)}
		p.m.t.Store(t)
	}
	t.m[k] = e
}

// Drop forgets every kept answer (the idle release).
func (m *Memo[E]) Drop() { m.t.Store(nil) }

// Len is the number of kept answers (tests).
func (m *Memo[E]) Len() int {
	if t := m.t.Load(); t != nil {
		return len(t.m)
	}
	return 0
}

// maxSeen is the number of slots of a stream's seen filter: the reads
// asked lately, one 8-byte hash a slot.
const maxSeen = 1024

// seen is the read loop's record of the payload-less reads it has
// answered lately, by a hash of their key in a slot of their own
// (direct-mapped: a read pushes out whatever shared its slot). An answer
// is kept only when its read is asked a second time: real traffic asks
// many endpoints, each once, and keeping each of those answers (an
// entry, its copied key and addresses, a map that starts over every 256)
// cost a third of the read loop's time on such a read, for answers never
// asked again (docs/BENCHMARKS.md, "Spread reads"). A repeat is answered
// from the memo from its third ask on. A collision of two hashes only
// keeps an answer one ask early, and the key itself is compared by the
// memo's map, so it never gives a wrong one.
type seen struct {
	seed  maphash.Seed
	h     maphash.Hash
	slots [maxSeen]uint64
}

// again records the read of key k and reports whether it was recorded
// before and has not been pushed out since.
func (m *seen) again(k Key) bool {
	if m.seed == (maphash.Seed{}) {
		m.seed = maphash.MakeSeed()
		m.h.SetSeed(m.seed)
	}
	m.h.Reset()
	m.h.WriteString(k.From)
	m.h.WriteByte(0)
	m.h.WriteString(k.To)
	m.h.WriteByte(0)
	m.h.WriteString(k.Name.Space)
	m.h.WriteByte(0)
	m.h.WriteString(k.Name.Local)
	m.h.WriteByte(0)
	m.h.WriteString(k.Node)
	// 0 marks an empty slot: a hash of 0 counts as 1.
	v := m.h.Sum64() | 1
	slot := &m.slots[v%maxSeen]
	if *slot == v {
		return true
	}
	*slot = v
	return false
}

// Key is the read's key.
func (p Pending[E]) Key() Key { return p.k }
