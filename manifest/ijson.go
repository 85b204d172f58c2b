package manifest

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"unicode/utf8"

	"github.com/gowebpki/jcs"

	"agentgw/wire"
)

// Canonicalize checks raw against the I-JSON prerequisites of RFC 8785 and
// the structural limits in lim, then returns its RFC 8785 canonical form.
//
// The whole document is bounded by lim.MaxManifestBytes; callers
// canonicalizing other documents, such as invocation arguments, set that
// field to their own bound. Strings are preserved without Unicode
// normalization. Errors are *Error values of kind KindMalformed or
// KindTooLarge.
func Canonicalize(raw []byte, lim Limits) ([]byte, error) {
	lim = lim.withDefaults()
	if len(raw) > lim.MaxManifestBytes {
		return nil, newError(KindTooLarge, "",
			fmt.Sprintf("document is %d bytes, limit is %d", len(raw), lim.MaxManifestBytes))
	}
	if err := checkJSON(raw, lim); err != nil {
		return nil, err
	}
	return transform(raw, "")
}

// transform runs the RFC 8785 transformation on input that checkJSON has
// already accepted. The library's messages quote input, so they are only
// wrapped, never shown.
func transform(raw []byte, path string) ([]byte, error) {
	out, err := jcs.Transform(raw)
	if err != nil {
		return nil, wrapError(KindMalformed, path, "cannot canonicalize JSON (RFC 8785)",
			fmt.Errorf("jcs transform: %w", err))
	}
	return out, nil
}

// HashBase64 returns the XEP-0300 value of a canonical document: the
// standard, padded Base64 encoding of its SHA-256 digest.
func HashBase64(canonical []byte) string {
	sum := sha256.Sum256(canonical)
	return base64.StdEncoding.EncodeToString(sum[:])
}

// scanFrame is one open object or array during checkJSON.
type scanFrame struct {
	obj     bool
	wantKey bool   // object: the next string token is a member name
	n       int    // members or elements seen so far
	key     string // current member name, or element index
	keys    map[string]struct{}
}

// checkJSON enforces, in one streaming pass and before anything is hashed:
// well-formed JSON with no trailing data; unique member names; valid UTF-8
// with no lone surrogates, raw or escaped; no U+FFFE or U+FFFF, which XML
// 1.0 cannot carry in the canonical form; numbers that are finite IEEE-754
// doubles; and the depth, member, string and number limits.
//
// It uses encoding/json's Decoder for tokenizing, but the Decoder silently
// replaces invalid UTF-8 and lone surrogate escapes with U+FFFD, so every
// string is also checked in its raw source form.
func checkJSON(raw []byte, lim Limits) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var stack []scanFrame
	done := false

	// valuePath locates the value currently being read; objectPath locates
	// the innermost open object (used for member name errors).
	valuePath := func() string {
		segs := make([]string, 0, len(stack))
		for _, f := range stack {
			segs = append(segs, f.key)
		}
		return pointer(segs...)
	}
	objectPath := func() string {
		segs := make([]string, 0, len(stack))
		for _, f := range stack[:len(stack)-1] {
			segs = append(segs, f.key)
		}
		return pointer(segs...)
	}
	// beginValue accounts for a value inside an array.
	beginValue := func() error {
		if len(stack) == 0 {
			return nil
		}
		top := &stack[len(stack)-1]
		if top.obj {
			return nil
		}
		top.key = strconv.Itoa(top.n)
		top.n++
		if top.n > lim.MaxMembers {
			return newError(KindTooLarge, objectPath(),
				fmt.Sprintf("array has more than %d elements", lim.MaxMembers))
		}
		return nil
	}
	endValue := func() {
		if len(stack) == 0 {
			done = true
			return
		}
		if top := &stack[len(stack)-1]; top.obj {
			top.wantKey = true
		}
	}

	for {
		start := dec.InputOffset()
		tok, err := dec.Token()
		if err == io.EOF {
			switch {
			case len(stack) > 0:
				return newError(KindMalformed, "", "unexpected end of JSON input")
			case !done:
				return newError(KindMalformed, "", "empty document")
			}
			return nil
		}
		if done {
			return wrapError(KindMalformed, "", "unexpected data after the JSON value", err)
		}
		if err != nil {
			return syntaxError(err, dec.InputOffset())
		}
		end := dec.InputOffset()

		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{', '[':
				if err := beginValue(); err != nil {
					return err
				}
				if len(stack)+1 > lim.MaxDepth {
					return newError(KindTooLarge, valuePath(),
						fmt.Sprintf("nesting depth exceeds limit of %d", lim.MaxDepth))
				}
				stack = append(stack, scanFrame{obj: t == '{', wantKey: t == '{'})
			default:
				stack = stack[:len(stack)-1]
				endValue()
			}
		case string:
			if top := len(stack) - 1; top >= 0 && stack[top].obj && stack[top].wantKey {
				if err := checkString(raw[start:end], t, lim, objectPath); err != nil {
					return err
				}
				f := &stack[top]
				f.n++
				if f.n > lim.MaxMembers {
					return newError(KindTooLarge, objectPath(),
						fmt.Sprintf("object has more than %d members", lim.MaxMembers))
				}
				if f.keys == nil {
					f.keys = make(map[string]struct{})
				}
				if _, dup := f.keys[t]; dup {
					return newError(KindMalformed, objectPath(), "duplicate object member name")
				}
				f.keys[t] = struct{}{}
				f.key = t
				f.wantKey = false
				continue
			}
			if err := beginValue(); err != nil {
				return err
			}
			if err := checkString(raw[start:end], t, lim, valuePath); err != nil {
				return err
			}
			endValue()
		case json.Number:
			if err := beginValue(); err != nil {
				return err
			}
			if err := checkNumber(t, lim, valuePath); err != nil {
				return err
			}
			endValue()
		default: // bool or nil
			if err := beginValue(); err != nil {
				return err
			}
			endValue()
		}
	}
}

// syntaxError converts a Decoder error into a bounded message. The
// Decoder's own text can quote an input character, so it is not shown.
func syntaxError(err error, offset int64) error {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		offset = se.Offset
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return wrapError(KindMalformed, "", "unexpected end of JSON input", err)
	}
	return wrapError(KindMalformed, "",
		fmt.Sprintf("invalid JSON syntax at byte offset %d", offset), err)
}

// checkNumber enforces the number length limit and the I-JSON double
// range. Underflow to zero is accepted, as RFC 8785 serializers do.
func checkNumber(n json.Number, lim Limits, path func() string) error {
	if len(n) > lim.MaxNumberBytes {
		return newError(KindTooLarge, path(),
			fmt.Sprintf("number is %d bytes long, limit is %d", len(n), lim.MaxNumberBytes))
	}
	f, err := strconv.ParseFloat(string(n), 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return newError(KindMalformed, path(), "number out of double range")
	}
	return nil
}

// checkString checks a decoded string (or member name) and its raw source
// span, which starts somewhere before the opening quote.
func checkString(span []byte, decoded string, lim Limits, path func() string) error {
	if msg := checkRawString(span); msg != "" {
		return newError(KindMalformed, path(), msg)
	}
	if len(decoded) > lim.MaxStringBytes {
		return newError(KindTooLarge, path(),
			fmt.Sprintf("string is %d bytes, limit is %d", len(decoded), lim.MaxStringBytes))
	}
	if !wire.ValidJSONText(decoded) {
		return newError(KindMalformed, path(), "string contains a character not allowed in XML 1.0")
	}
	return nil
}

// checkRawString scans a raw JSON string literal for invalid UTF-8 and for
// escaped surrogates that do not form a pair. It returns "" when the literal
// is acceptable. The Decoder has already checked the escape syntax, but the
// scan stays bounds-safe regardless.
func checkRawString(span []byte) string {
	q := bytes.IndexByte(span, '"')
	if q < 0 {
		return ""
	}
	s := span[q+1:]
	for j := 0; j < len(s); {
		c := s[j]
		switch {
		case c == '"':
			return ""
		case c == '\\':
			if j+1 < len(s) && s[j+1] == 'u' {
				r, ok := hex4(s, j+2)
				if !ok {
					return "invalid \\u escape in string"
				}
				j += 6
				switch {
				case 0xDC00 <= r && r <= 0xDFFF:
					return "lone surrogate in string"
				case 0xD800 <= r && r <= 0xDBFF:
					if j+1 < len(s) && s[j] == '\\' && s[j+1] == 'u' {
						if r2, ok := hex4(s, j+2); ok && 0xDC00 <= r2 && r2 <= 0xDFFF {
							j += 6
							continue
						}
					}
					return "lone surrogate in string"
				}
				continue
			}
			j += 2
		case c < utf8.RuneSelf:
			j++
		default:
			r, size := utf8.DecodeRune(s[j:])
			if r == utf8.RuneError && size <= 1 {
				return "invalid UTF-8 in string"
			}
			j += size
		}
	}
	return ""
}

// hex4 decodes four hexadecimal digits at s[i:].
func hex4(s []byte, i int) (rune, bool) {
	if i+4 > len(s) {
		return 0, false
	}
	var r rune
	for _, c := range s[i : i+4] {
		r <<= 4
		switch {
		case '0' <= c && c <= '9':
			r |= rune(c - '0')
		case 'a' <= c && c <= 'f':
			r |= rune(c - 'a' + 10)
		case 'A' <= c && c <= 'F':
			r |= rune(c - 'A' + 10)
		default:
			return 0, false
		}
	}
	return r, true
}
