// Package ident checks identifier grammars used in more than one place:
// environment variable and header names (config and the mcp runtime), and
// the unreserved-character grammar of API versions and task IDs (manifest
// and task).
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

// Unreserved reports whether s, of minLen to maxLen bytes, holds only the
// RFC 3986 unreserved characters [A-Za-z0-9._~-]: the grammar of API
// versions and of request, task and event IDs.
func Unreserved(s string, minLen, maxLen int) bool {
	if len(s) < minLen || len(s) > maxLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case c == '.', c == '_', c == '~', c == '-':
		default:
			return false
		}
	}
	return true
}
