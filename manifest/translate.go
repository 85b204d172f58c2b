package manifest

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
)

// The library's error strings quote schema and instance values, so every
// library error is translated here into a bounded message built only from
// our own text, numbers, and identifiers that pass isSafeIdent. The
// original error stays reachable through Unwrap for local debugging.

// compileError translates a jsonschema compilation error for the schema
// located at path.
func compileError(err error, path string) error {
	var (
		own      *Error
		metaErr  *jsonschema.SchemaValidationError
		regexErr *jsonschema.InvalidRegexError
		vocabErr *jsonschema.UnsupportedVocabularyError
		anchor   *jsonschema.AnchorNotFoundError
		ptrErr   *jsonschema.JSONPointerNotFoundError
		badPtr   *jsonschema.InvalidJsonPointerError
		dupID    *jsonschema.DuplicateIDError
		dupAnch  *jsonschema.DuplicateAnchorError
		loadErr  *jsonschema.LoadURLError
	)
	wrapped := fmt.Errorf("compile schema: %w", err)
	// The library's error types have no Unwrap methods, so an error raised
	// by refLoader is dug out of LoadURLError by hand.
	if errors.As(err, &loadErr) && errors.As(loadErr.Err, &own) {
		return own
	}
	switch {
	case errors.As(err, &own):
		return own
	case errors.As(err, &metaErr):
		var ve *jsonschema.ValidationError
		if errors.As(metaErr.Err, &ve) {
			e := validationError(ve, joinPointer(path, fragmentSegments(metaErr.URL)...))
			e.Msg = "invalid schema: " + e.Msg
			e.err = wrapped
			return e
		}
		return wrapError(KindInvalid, path, "invalid schema", wrapped)
	case errors.As(err, &regexErr):
		return wrapError(KindInvalid, path, "regular expression not supported", wrapped)
	case errors.As(err, &vocabErr):
		return wrapError(KindInvalid, path, fmt.Sprintf(
			"$vocabulary %s is required but unsupported", safeVocab(vocabErr.Vocabulary)), wrapped)
	case errors.As(err, &anchor), errors.As(err, &ptrErr), errors.As(err, &badPtr):
		return wrapError(KindInvalid, path, "reference target not found in the schema", wrapped)
	case errors.As(err, &dupID):
		return wrapError(KindInvalid, path, "duplicate $id in the schema", wrapped)
	case errors.As(err, &dupAnch):
		return wrapError(KindInvalid, path, "duplicate anchor in the schema", wrapped)
	case errors.As(err, &loadErr):
		return wrapError(KindInvalid, path, "external reference could not be loaded", wrapped)
	}
	return wrapError(KindInvalid, path, "schema does not compile", wrapped)
}

// fragmentSegments returns the JSON pointer segments of a compiled-schema
// location of the form "https://agentgw.invalid/tool-schema.json#/a/b".
// Locations in other documents yield no segments.
func fragmentSegments(loc string) []string {
	base, frag, _ := strings.Cut(loc, "#")
	if base != schemaBaseURL {
		return nil
	}
	frag, err := url.PathUnescape(frag)
	if err != nil || !strings.HasPrefix(frag, "/") {
		return nil
	}
	segs := strings.Split(frag[1:], "/")
	for i, s := range segs {
		segs[i] = strings.ReplaceAll(strings.ReplaceAll(s, "~1", "/"), "~0", "~")
	}
	return segs
}

// validationError reduces a validation error tree to one leaf, chosen
// deterministically (the first location in sorted order), and describes
// it. base prefixes the instance location.
func validationError(ve *jsonschema.ValidationError, base string) *Error {
	leaves := collectLeaves(ve, nil)
	slices.SortStableFunc(leaves, func(a, b *jsonschema.ValidationError) int {
		return slices.Compare(a.InstanceLocation, b.InstanceLocation)
	})
	leaf := ve
	if len(leaves) > 0 {
		leaf = leaves[0]
	}
	path := joinPointer(base, leaf.InstanceLocation...)
	k, msg := describeKind(leaf.ErrorKind)
	return newError(k, path, msg)
}

func collectLeaves(ve *jsonschema.ValidationError, out []*jsonschema.ValidationError) []*jsonschema.ValidationError {
	if len(ve.Causes) == 0 {
		return append(out, ve)
	}
	for _, c := range ve.Causes {
		out = collectLeaves(c, out)
	}
	return out
}

// describeKind turns one validation failure into a safe message. Values
// named in messages come from the schema (ours or the meta-schema) or are
// counts computed from the input, never the input itself.
func describeKind(ek jsonschema.ErrorKind) (Kind, string) {
	switch k := ek.(type) {
	case *kind.Required:
		return KindInvalid, "missing required member " + quoteAll(k.Missing)
	case *kind.AdditionalProperties:
		msg := "unknown member"
		if len(k.Properties) > 0 {
			msg += " " + safeIdent(k.Properties[0])
		}
		if len(k.Properties) > 1 {
			msg += fmt.Sprintf(" (and %d more)", len(k.Properties)-1)
		}
		return KindInvalid, msg
	case *kind.Type:
		return KindInvalid, fmt.Sprintf("must be of type %s, not %s", strings.Join(k.Want, " or "), k.Got)
	case *kind.Const:
		return KindInvalid, "does not have the value the schema requires"
	case *kind.Enum:
		return KindInvalid, "is not one of the values the schema allows"
	case *kind.MinLength:
		return KindInvalid, fmt.Sprintf("length %d is below the minimum of %d", k.Got, k.Want)
	case *kind.MaxLength:
		return KindTooLarge, fmt.Sprintf("length %d exceeds the maximum of %d", k.Got, k.Want)
	case *kind.MinItems:
		return KindInvalid, fmt.Sprintf("has %d items, minimum is %d", k.Got, k.Want)
	case *kind.MaxItems:
		return KindTooLarge, fmt.Sprintf("has %d items, maximum is %d", k.Got, k.Want)
	case *kind.MinProperties:
		return KindInvalid, fmt.Sprintf("has %d members, minimum is %d", k.Got, k.Want)
	case *kind.MaxProperties:
		return KindTooLarge, fmt.Sprintf("has %d members, maximum is %d", k.Got, k.Want)
	case *kind.Pattern:
		return KindInvalid, fmt.Sprintf("does not match the pattern %q", k.Want)
	case *kind.UniqueItems:
		return KindInvalid, fmt.Sprintf("items %d and %d are equal; items must be unique",
			k.Duplicates[0], k.Duplicates[1])
	case *kind.Minimum:
		return KindInvalid, "is below the minimum of " + k.Want.RatString()
	case *kind.Maximum:
		return KindInvalid, "exceeds the maximum of " + k.Want.RatString()
	case *kind.ExclusiveMinimum:
		return KindInvalid, "must be greater than " + k.Want.RatString()
	case *kind.ExclusiveMaximum:
		return KindInvalid, "must be less than " + k.Want.RatString()
	case *kind.MultipleOf:
		return KindInvalid, "must be a multiple of " + k.Want.RatString()
	case *kind.Format:
		return KindInvalid, fmt.Sprintf("is not a valid %q", k.Want)
	case *kind.FalseSchema:
		return KindInvalid, "is not allowed here"
	case *kind.Reference:
		return KindInvalid, "does not satisfy a referenced schema"
	}
	if path := ek.KeywordPath(); len(path) > 0 {
		return KindInvalid, fmt.Sprintf("violates the %q keyword", path[len(path)-1])
	}
	return KindInvalid, "does not satisfy the schema"
}

func quoteAll(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = safeIdent(n)
	}
	return strings.Join(q, ", ")
}
