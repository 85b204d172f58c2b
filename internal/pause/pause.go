// Package pause waits for a while unless a context ends first.
package pause

import (
	"context"
	"time"
)

// For waits d, or until ctx ends; it reports whether d elapsed.
func For(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
