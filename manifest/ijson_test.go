package manifest_test

import (
	"strings"
	"testing"

	"agentgw/manifest"
)

func TestCanonicalize(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
	}{
		{"member order and whitespace", "{ \"b\" : 1,\n\"a\":[ true , null ] }", `{"a":[true,null],"b":1}`},
		{"ECMAScript numbers", `[1.0,1e21,0.0000001,-0,100,1E2,0.5e-3]`, `[1,1e+21,1e-7,0,100,100,0.0005]`},
		{"underflow to zero", `[1e-400]`, `[0]`},
		{"escapes", `["\u0041\n\u000f\"\\\/"]`, `["A\n\u000f\"\\/"]`},
		{"no Unicode normalization", `["\u00e9","e\u0301"]`, "[\"\u00e9\",\"e\u0301\"]"},
		{"surrogate pair decoded", `["\ud83d\ude00"]`, "[\"\U0001F600\"]"},
		// RFC 8785 sorts by UTF-16 code units: U+1F600 (D83D DE00)
		// sorts before U+E000.
		{"UTF-16 member order", "{\"\ue000\":1,\"\U0001F600\":2}", "{\"\U0001F600\":2,\"\ue000\":1}"},
		{"scalar document", ` "x" `, `"x"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := manifest.Canonicalize([]byte(tc.in), manifest.Limits{})
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Errorf("got %s, want %s", got, tc.want)
			}
		})
	}
}

func TestCanonicalizeRejects(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
		lim  manifest.Limits
		kind manifest.Kind
		path string
		msg  string
	}{
		{"duplicate", `{"a":1,"a":2}`, manifest.Limits{}, manifest.KindMalformed, "", "duplicate object member name"},
		{"nested duplicate", `{"x":[{"a":1},{"b":1,"b":2}]}`, manifest.Limits{}, manifest.KindMalformed, "/x/1", "duplicate object member name"},
		{"escaped lone surrogate", `["\ud800"]`, manifest.Limits{}, manifest.KindMalformed, "/0", "lone surrogate"},
		{"high surrogate then escape", `["\ud800\n"]`, manifest.Limits{}, manifest.KindMalformed, "/0", "lone surrogate"},
		{"two high surrogates", `["\ud800\ud800"]`, manifest.Limits{}, manifest.KindMalformed, "/0", "lone surrogate"},
		{"raw invalid UTF-8", "[\"a\xc3\"]", manifest.Limits{}, manifest.KindMalformed, "/0", "invalid UTF-8"},
		{"overflow", `[1e400]`, manifest.Limits{}, manifest.KindMalformed, "/0", "number out of double range"},
		{"negative overflow", `{"n":-1.8e308}`, manifest.Limits{}, manifest.KindMalformed, "/n", "number out of double range"},
		{"U+FFFE", `["\ufffe"]`, manifest.Limits{}, manifest.KindMalformed, "/0", "not allowed in XML 1.0"},
		{"unterminated", `{"a":[1,2`, manifest.Limits{}, manifest.KindMalformed, "", "unexpected end of JSON input"},
		{"unterminated string", `["abc`, manifest.Limits{}, manifest.KindMalformed, "", "unexpected end of JSON input"},
		{"two values", `1 2`, manifest.Limits{}, manifest.KindMalformed, "", "unexpected data after the JSON value"},
		{"trailing garbage", `{} x`, manifest.Limits{}, manifest.KindMalformed, "", "unexpected data after the JSON value"},
		{"byte order mark", "\ufeff{}", manifest.Limits{}, manifest.KindMalformed, "", "invalid JSON syntax"},
		{"NaN", `[NaN]`, manifest.Limits{}, manifest.KindMalformed, "", "invalid JSON syntax"},
		{"document size", `[1,2,3]`, manifest.Limits{MaxManifestBytes: 4}, manifest.KindTooLarge, "", "document is 7 bytes, limit is 4"},
		{"depth", `[[[1]]]`, manifest.Limits{MaxDepth: 2}, manifest.KindTooLarge, "/0/0", "nesting depth exceeds limit of 2"},
		{"members", `{"a":1,"b":2,"c":3}`, manifest.Limits{MaxMembers: 2}, manifest.KindTooLarge, "", "object has more than 2 members"},
		{"member name length", `{"abcdef":1}`, manifest.Limits{MaxStringBytes: 4}, manifest.KindTooLarge, "", "string is 6 bytes, limit is 4"},
		{"unsafe path segment", `{"a b":["\ud800"]}`, manifest.Limits{}, manifest.KindMalformed, "/*/0", "lone surrogate"},
		{"escaped path segment", `{"a/b~":["\ud800"]}`, manifest.Limits{}, manifest.KindMalformed, "/a~1b~0/0", "lone surrogate"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := manifest.Canonicalize([]byte(tc.in), tc.lim)
			checkError(t, err, tc.kind, tc.path, tc.msg)
		})
	}
}

// TestErrorsDoNotReflectInput checks the diagnostic policy: values are
// never echoed, and identifiers (member names, $ref targets) only when they
// are short and drawn from a safe ASCII set, so markup never is.
func TestErrorsDoNotReflectInput(t *testing.T) {
	const marker = "INJECTED<iq/>"
	for _, in := range []string{
		`{"` + marker + `":1,"` + marker + `":2}`,
		`["` + marker + `\ud800"]`,
		`{"x":` + marker + `}`,
		`[1e400` + strings.Repeat("0", 10) + `]`,
		manifestWithTool(`{"name":"` + marker + `","inputSchema":{"type":"string"}}`),
		manifestWithTool(`{"name":"t","inputSchema":{"type":"object","properties":{"a":{"pattern":"` + marker + `(?<=x)"}}}}`),
		manifestWithTool(`{"name":"t","inputSchema":{"type":"object","properties":{"` + marker + `":{"x":1}}}}`),
		manifestWithTool(`{"name":"t","inputSchema":{"type":"object","` + marker + `":1}}`),
		manifestWithAgent(`"jid":"` + marker + `@agents.example","name":"w","version":"1"`),
		manifestWithAgent(okAgent + `,"homepage":"https://` + marker + `"`),
		`{"manifestSpecVersion":"0","agent":{` + okAgent + `},"tools":[],"` + marker + `":1}`,
	} {
		_, err := manifest.Parse([]byte(in), manifest.Options{})
		if err == nil {
			t.Errorf("accepted %s", in)
			continue
		}
		if strings.Contains(err.Error(), "INJECTED") || strings.Contains(err.Error(), "1e400") {
			t.Errorf("error reflects input: %v", err)
		}
	}

	// A $ref target is an identifier: echoed only in its percent-encoded,
	// markup-free form.
	in := manifestWithTool(`{"name":"t","inputSchema":{"type":"object","$ref":"https://evil.example/` + marker + `"}}`)
	_, err := manifest.Parse([]byte(in), manifest.Options{})
	if err == nil || strings.ContainsAny(err.Error(), "<>") {
		t.Errorf("unsafe echo of a $ref target: %v", err)
	}
	// A long identifier is not echoed at all.
	in = manifestWithTool(`{"name":"t","inputSchema":{"type":"object","$ref":"https://evil.example/` + strings.Repeat("a", 80) + `"}}`)
	_, err = manifest.Parse([]byte(in), manifest.Options{})
	if err == nil || strings.Contains(err.Error(), "aaaa") {
		t.Errorf("long identifier echoed: %v", err)
	}
}
