package config

import (
	"bytes"
	"crypto/subtle"
	"fmt"
	"net"
	"strconv"
	"strings"

	"agentgw/scope"
)

// ListenerFile holds the keys that [mcp] and [chat] share, for their MCP
// HTTP listeners: the Origins allowed, the sessions one token may hold,
// and the bearer tokens ([[mcp.token]], [[chat.token]]). T is the table's
// token entry, which adds whom the token acts as.
type ListenerFile[T tokenFile] struct {
	AllowedOrigins      []string `toml:"allowed_origins"`
	MaxSessionsPerToken int      `toml:"max_sessions_per_token"`
	Tokens              []T      `toml:"token"`
}

// TokenFile is what every token entry has: the file holding the token,
// and its scopes.
type TokenFile struct {
	File   string   `toml:"file"`
	Scopes []string `toml:"scopes"`
}

func (t TokenFile) keys() TokenFile { return t }

// tokenFile is a token entry embedding TokenFile.
type tokenFile interface{ keys() TokenFile }

// Listener is the validated ListenerFile; V is the table's validated
// token.
type Listener[V any] struct {
	// AllowedOrigins are the HTTP Origin values accepted, lowercased
	// (none: a request with an Origin is refused).
	AllowedOrigins []string
	// MaxSessionsPerToken bounds the live MCP sessions of one token.
	MaxSessionsPerToken int
	Tokens              []V
}

// BearerToken is what every validated token has.
type BearerToken struct {
	// File holds the token; Token is its content, never logged.
	File  string
	Token []byte
	// Scopes as written; scope.Wildcard means every scope.
	Scopes []string
}

// limits validates max_sessions_per_token and allowed_origins of table.
func (l ListenerFile[T]) limits(table string, p *problems) (origins []string, maxSessions int) {
	if l.MaxSessionsPerToken < 1 || l.MaxSessionsPerToken > MaxMaxSessionsPerToken {
		p.bad(table+".max_sessions_per_token", "must be between 1 and %d", MaxMaxSessionsPerToken)
	}
	for i, o := range l.AllowedOrigins {
		if norm, ok := originValue(o); ok {
			origins = append(origins, norm)
		} else {
			p.bad(fmt.Sprintf("%s.allowed_origins[%d]", table, i), "must be an origin, scheme://host[:port] with no path (https://app.example.org)")
		}
	}
	return origins, l.MaxSessionsPerToken
}

// buildTokens validates the [[table.token]] entries of l, in turn each
// token's file (readBearerToken), whom it acts as (as, which checks and
// reports its own key) and its scopes; made makes the table's token.
func buildTokens[T tokenFile, V any](l ListenerFile[T], table, dir string, p *problems, as func(key string, t T) string, made func(BearerToken, string) V) []V {
	var out []V
	var seen [][]byte
	for i, t := range l.Tokens {
		key := fmt.Sprintf("%s.token[%d]", table, i)
		k := t.keys()
		var b BearerToken
		b.File, b.Token = readBearerToken(key, dir, k.File, table+".token", seen, p)
		seen = append(seen, b.Token)
		who := as(key, t)
		if len(k.Scopes) == 0 {
			p.bad(key+".scopes", "required: list scopes, or \"*\" for every scope")
		}
		for j, sc := range k.Scopes {
			if sc != scope.Wildcard && !scope.Known(sc) {
				p.bad(fmt.Sprintf("%s.scopes[%d]", key, j), "unknown scope %q (see docs/mcp-server.md)", sc)
				continue
			}
			b.Scopes = append(b.Scopes, sc)
		}
		out = append(out, made(b, who))
	}
	return out
}

// A bearer token carries at least 128 bits: 22 characters of base64url
// (6 bits each) or 32 hex digits (4 bits each).
const (
	minTokenBase64 = 22
	minTokenHex    = 32
)

// strongToken reports whether b is long enough for 128 bits: a token of
// hex digits alone needs minTokenHex of them, any other minTokenBase64
// characters.
func strongToken(b []byte) bool {
	hexOnly := true
	for _, c := range b {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			hexOnly = false
			break
		}
	}
	if hexOnly {
		return len(b) >= minTokenHex
	}
	return len(b) >= minTokenBase64
}

// readBearerToken reads the bearer token file of [[mcp.token]] or
// [[chat.token]] number key (list names the array, for the error about a
// token that seen, the tokens before it, already holds): a private file
// (readPrivate) holding at least 128 bits (strongToken). It returns the
// resolved path and the token, or reports to p and returns a nil token.
func readBearerToken(key, dir, file, list string, seen [][]byte, p *problems) (string, []byte) {
	if file == "" {
		p.bad(key+".file", "required")
		return "", nil
	}
	path := resolve(dir, file)
	b, err := readPrivate(path)
	switch {
	case err != nil:
		p.bad(key+".file", "%v", err)
		return path, nil
	case !strongToken(b):
		p.bad(key+".file", "the token in %s is too short: a token needs at least 128 bits, %d or more base64url characters or %d hex digits (openssl rand -hex 16)", path, minTokenBase64, minTokenHex)
		return path, nil
	}
	for k, prev := range seen {
		if subtle.ConstantTimeCompare(prev, b) == 1 {
			p.bad(key+".file", "holds the same token as %s[%d]", list, k)
		}
	}
	return path, b
}

// readPrivate reads a password or token file as every secret file is read
// (readSecret: the secret alone on one line, in a file that neither group
// nor others may read or write, internal/secretfile), into a copy of its
// own.
func readPrivate(path string) ([]byte, error) {
	b, err := readSecret(path)
	if err != nil {
		return nil, err
	}
	return bytes.Clone(b), nil
}

// originValue checks an allowed Origin (RFC 6454: scheme "://" host
// [":" port], as browsers send it) and returns it lowercased.
func originValue(o string) (string, bool) {
	scheme, rest, ok := strings.Cut(o, "://")
	if !ok || scheme == "" || rest == "" || strings.ContainsAny(rest, "/?#@ \t") {
		return "", false
	}
	for _, r := range scheme {
		if !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || r == '+' || r == '-' || r == '.') {
			return "", false
		}
	}
	if h, p, err := net.SplitHostPort(rest); err == nil {
		if h == "" || p == "" {
			return "", false
		}
		if _, err := strconv.ParseUint(p, 10, 16); err != nil {
			return "", false
		}
	}
	return strings.ToLower(o), true
}
