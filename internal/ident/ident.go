// Package ident checks the names that configuration hands to child
// processes and HTTP upstreams: environment variable names and header
// names. The config loader and the mcp runtime both check them, with one
// definition.
package ident

import "strings"

// EnvName reports whether k is a portable environment variable name
// (letters, digits and '_', not starting with a digit).
func EnvName(k string) bool {
	if k == "" {
		return false
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		switch {
		case c == '_', 'A' <= c && c <= 'Z', 'a' <= c && c <= 'z':
		case '0' <= c && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

// HeaderName reports whether h is an RFC 9110 token, as a header field name
// must be.
func HeaderName(h string) bool {
	if h == "" {
		return false
	}
	for i := 0; i < len(h); i++ {
		c := h[i]
		switch {
		case 'A' <= c && c <= 'Z', 'a' <= c && c <= 'z', '0' <= c && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}
