package adhoc

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"sync"
	"time"
)

// Limits of the gateway's command sessions (docs/limits.md). Commands at
// endpoints need none: their sessionid is their task's request-id.
const (
	// MaxSessions bounds the gateway command sessions kept; past it the
	// oldest is forgotten (its next step answers bad-request).
	MaxSessions = 1024
	// SessionTTL is how long an idle gateway command session is kept.
	SessionTTL = 10 * time.Minute
)

// gwSession is the state of one gateway command session.
type gwSession struct {
	owner, node string
	// query and index are a paged search's: the words and the offset
	// of the page shown.
	query    string
	index    int
	searched bool
	// table is a Find agents session whose client asked for the
	// reported/item table (layout=table).
	table   bool
	touched time.Time
}

// Sessions holds the gateway's command sessions in memory: the paging
// state of "Find agents" and of the admins' list. They are not durable;
// after a restart a client starts the command again. It is safe for
// concurrent use.
type Sessions struct {
	// Now is the clock (nil: time.Now).
	Now func() time.Time
	// Rand is the sessionid source (nil: crypto/rand).
	Rand io.Reader

	mu sync.Mutex
	m  map[string]*gwSession
}

func (s *Sessions) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

// start opens a session for owner's run of node.
func (s *Sessions) start(owner, node string) (string, *gwSession, error) {
	r := s.Rand
	if r == nil {
		r = rand.Reader
	}
	var b [16]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return "", nil, fmt.Errorf("adhoc: read random: %w", err)
	}
	id := "gw" + hex.EncodeToString(b[:])
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[string]*gwSession{}
	}
	s.expireLocked(now)
	if len(s.m) >= MaxSessions {
		var oldest string
		for k, v := range s.m {
			if oldest == "" || v.touched.Before(s.m[oldest].touched) {
				oldest = k
			}
		}
		delete(s.m, oldest)
	}
	sess := &gwSession{owner: owner, node: node, touched: now}
	s.m[id] = sess
	return id, sess, nil
}

// get returns owner's session id of node, or nil: another account's
// session is as unknown as one that never existed.
func (s *Sessions) get(id, owner, node string) *gwSession {
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expireLocked(now)
	sess := s.m[id]
	if sess == nil || sess.owner != owner || sess.node != node {
		return nil
	}
	sess.touched = now
	return sess
}

// end forgets a session.
func (s *Sessions) end(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, id)
}

func (s *Sessions) expireLocked(now time.Time) {
	for k, v := range s.m {
		if now.Sub(v.touched) > SessionTTL {
			delete(s.m, k)
		}
	}
}
