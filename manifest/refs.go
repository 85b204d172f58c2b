package manifest

import (
	"bytes"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// refLoader is the only URL loader the validator ever sees. The library's
// default loader opens file: URLs, so a tool schema containing
// {"$ref":"file:///etc/passwd"} would read local files; this loader
// refuses every URL that Options.AllowedRefs does not admit, and even an
// admitted URL is fetched only through Options.LoadRef, never by itself.
type refLoader struct {
	opts  Options
	lim   Limits
	path  string // pointer of the schema being compiled, for errors
	loads int
	// regexCost is the walker's, so that loaded documents count too.
	regexCost *int
}

// Load implements jsonschema.URLLoader.
func (l *refLoader) Load(u string) (any, error) {
	ref := safeIdent(u)
	if !refAllowed(u, l.opts.AllowedRefs) {
		return nil, newError(KindInvalid, l.path, fmt.Sprintf(
			"external reference %s is not allowed: schemas are never loaded from the network or files", ref))
	}
	if l.opts.LoadRef == nil {
		return nil, newError(KindInvalid, l.path, fmt.Sprintf(
			"external reference %s is allowlisted but no loader is configured", ref))
	}
	l.loads++
	if l.loads > l.lim.MaxRefLoads {
		return nil, newError(KindTooLarge, l.path,
			fmt.Sprintf("schema loads more than %d external references", l.lim.MaxRefLoads))
	}
	raw, err := l.opts.LoadRef(u)
	if err != nil {
		return nil, wrapError(KindInvalid, l.path,
			fmt.Sprintf("external reference %s could not be loaded", ref),
			fmt.Errorf("load ref: %w", err))
	}
	if len(raw) > l.lim.MaxSchemaBytes {
		return nil, newError(KindTooLarge, l.path, fmt.Sprintf(
			"external reference %s is %d bytes, limit is %d", ref, len(raw), l.lim.MaxSchemaBytes))
	}
	// The referenced document is held to the same rules as the schema
	// that refers to it.
	if err := checkJSON(raw, l.lim); err != nil {
		return nil, inExternal(err, l.path, ref)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, wrapError(KindMalformed, l.path,
			fmt.Sprintf("external reference %s is not valid JSON", ref), err)
	}
	w := &walker{lim: l.lim, regexCost: l.regexCost}
	if err := w.schema(doc, ""); err != nil {
		return nil, inExternal(err, l.path, ref)
	}
	return doc, nil
}

// inExternal relocates an error found inside an external document to the
// referring schema, keeping the inner location in the message.
func inExternal(err error, path, ref string) error {
	var e *Error
	if !errors.As(err, &e) {
		return err
	}
	inner := e.Path
	if inner == "" {
		inner = "/"
	}
	return &Error{
		Kind: e.Kind,
		Path: path,
		Msg:  fmt.Sprintf("in external reference %s at %s: %s", ref, inner, e.Msg),
		err:  e.err,
	}
}

// refAllowed reports whether u falls under one of the allowed prefixes. A
// prefix matches only at a path boundary, so "https://s.example/a" admits
// "https://s.example/a/b.json" but not "https://s.example/ab" or
// "https://s.example/a.evil.example/". URLs with userinfo or dot segments
// are refused outright.
func refAllowed(u string, allowed []string) bool {
	if len(allowed) == 0 {
		return false
	}
	pu, err := url.Parse(u)
	if err != nil || pu.User != nil || !pu.IsAbs() {
		return false
	}
	for _, seg := range strings.Split(pu.Path, "/") {
		if seg == "." || seg == ".." {
			return false
		}
	}
	for _, p := range allowed {
		if p == "" || !strings.HasPrefix(u, p) {
			continue
		}
		rest := u[len(p):]
		if rest == "" || strings.HasSuffix(p, "/") || rest[0] == '/' || rest[0] == '#' {
			return true
		}
	}
	return false
}
