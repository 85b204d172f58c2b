// Package lua writes the Lua values of the Prosody configurations that
// agentgw init prints and the test harness writes.
package lua

import (
	"fmt"
	"strings"
)

// Quote returns s as a Lua string literal: " and \ escaped, control
// characters as decimal escapes, every other byte as it is.
func Quote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c < 0x20 || c == 0x7f:
			fmt.Fprintf(&b, "\\%03d", c)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}
