package pause_test

import (
	"context"
	"testing"
	"time"

	"agentgw/internal/pause"
)

func TestFor(t *testing.T) {
	if !pause.For(context.Background(), time.Millisecond) {
		t.Fatal("For returned false with a live context")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if pause.For(ctx, time.Hour) {
		t.Fatal("For waited out an hour on an ended context")
	}
}
