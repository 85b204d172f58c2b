package gateway

import (
	"testing"
	"time"
)

func TestLimiter(t *testing.T) {
	l := newLimiter(10, 3)
	t0 := time.Unix(1000, 0)
	for i := 0; i < 3; i++ {
		if !l.allow("a@x", t0) {
			t.Fatalf("burst request %d refused", i)
		}
	}
	if l.allow("a@x", t0) {
		t.Fatal("request past the burst allowed")
	}
	if !l.allow("b@x", t0) {
		t.Fatal("another sender limited by the first")
	}
	if !l.allow("a@x", t0.Add(100*time.Millisecond)) {
		t.Fatal("token not refilled after 1/rate")
	}
	if l.allow("a@x", t0.Add(100*time.Millisecond)) {
		t.Fatal("refilled more than the rate")
	}
	l.allow("c@x", t0.Add(3*time.Minute))
	if _, ok := l.buckets["b@x"]; ok {
		t.Fatal("idle bucket not swept")
	}
	var off *limiter
	if !off.allow("a@x", t0) || !newLimiter(0, 0).allow("a@x", t0) {
		t.Fatal("a disabled limiter refused")
	}
}
