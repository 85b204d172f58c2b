package mcpface

import (
	"strings"
	"testing"
	"time"
)

// TestRequestState: a requestState opens only for the owner it was sealed
// for, untouched, before it expires, and only in the process that sealed
// it.
func TestRequestState(t *testing.T) {
	s := &Server{mrtrKey: newMRTRKey()}
	st := mrtrState{Task: "mcptask-1", Key: "input-1", Expires: time.Now().Add(time.Minute).Unix()}
	sealed := s.sealState("token:a/1", st)
	if got, ok := s.openState("token:a/1", sealed); !ok || got != st {
		t.Fatalf("own state: %+v %v", got, ok)
	}
	if _, ok := s.openState("token:a/2", sealed); ok {
		t.Error("another token opened the state")
	}
	payload, sig, _ := strings.Cut(sealed, ".")
	forged := s.sealState("token:a/1", mrtrState{Task: "mcptask-2", Key: "input-1", Expires: st.Expires})
	fp, _, _ := strings.Cut(forged, ".")
	if _, ok := s.openState("token:a/1", fp+"."+sig); ok {
		t.Error("a payload with another's MAC opened")
	}
	if _, ok := s.openState("token:a/1", payload+"."); ok {
		t.Error("a state without a MAC opened")
	}
	if _, ok := (&Server{mrtrKey: newMRTRKey()}).openState("token:a/1", sealed); ok {
		t.Error("another process's key opened the state")
	}
	old := s.sealState("token:a/1", mrtrState{Task: "mcptask-1", Key: "input-1", Expires: time.Now().Add(-time.Second).Unix()})
	if _, ok := s.openState("token:a/1", old); ok {
		t.Error("an expired state opened")
	}
}
