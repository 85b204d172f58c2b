package manifest_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"agentgw/manifest"
)

// Test vectors from the ProtoXEP.
const (
	weatherHash  = "K2/YdwvIBAlfUIeZHiNCyiYA4m4W2wrEOqXQDoQyXp4="
	forecastHash = "XxGP62PwgOW9NLxx8ysunvuijMhSd0y4j1SSRTAbt7c="

	weatherCompact   = `{"manifestSpecVersion":"0","agent":{"jid":"weather@agents.example","name":"weather","version":"1.4.0"},"tools":[]}`
	weatherCanonical = `{"agent":{"jid":"weather@agents.example","name":"weather","version":"1.4.0"},"manifestSpecVersion":"0","tools":[]}`

	forecastInput     = `{"type":"object","properties":{"city":{"type":"string"}},"required":["city"],"additionalProperties":false}`
	forecastCanonical = `{"additionalProperties":false,"properties":{"city":{"type":"string"}},"required":["city"],"type":"object"}`
)

func readTestdata(tb testing.TB, name string) []byte {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join("..", "testdata", "manifest", name))
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

func TestSpecVectors(t *testing.T) {
	for _, tc := range []struct {
		name string
		raw  []byte
	}{
		{"compact", []byte(weatherCompact)},
		{"register example whitespace", readTestdata(t, "weather.json")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := manifest.Parse(tc.raw, manifest.Options{Domain: "agents.example"})
			if err != nil {
				t.Fatal(err)
			}
			if got := string(m.Canonical); got != weatherCanonical {
				t.Errorf("canonical = %s, want %s", got, weatherCanonical)
			}
			if got := m.HashBase64(); got != weatherHash {
				t.Errorf("hash = %s, want %s", got, weatherHash)
			}
			if m.Hash != sha256.Sum256(m.Canonical) {
				t.Error("Hash is not the SHA-256 of Canonical")
			}
			if m.JID != "weather@agents.example" || m.Name != "weather" || m.Version != "1.4.0" || len(m.Tools) != 0 {
				t.Errorf("unexpected fields: %+v", m)
			}
		})
	}
}

func TestInputSchemaVector(t *testing.T) {
	canon, err := manifest.Canonicalize([]byte(forecastInput), manifest.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if string(canon) != forecastCanonical {
		t.Errorf("canonical = %s, want %s", canon, forecastCanonical)
	}
	if got := manifest.HashBase64(canon); got != forecastHash {
		t.Errorf("hash = %s, want %s", got, forecastHash)
	}
	if _, err := manifest.CompileSchema(canon, true, manifest.Options{}); err != nil {
		t.Errorf("compile: %v", err)
	}
}

func TestFullExample(t *testing.T) {
	m, err := manifest.Parse(readTestdata(t, "weather-full.json"), manifest.Options{Domain: "agents.example"})
	if err != nil {
		t.Fatal(err)
	}
	if m.Title != "Weather Agent" || m.Vendor != "Example" || m.Description != "Provides weather forecasts." {
		t.Errorf("agent fields: %+v", m)
	}
	if m.ImplementationName != "example-weather" || m.ImplementationVersion != "3.2.1" || m.MCPProtocolVersion != "2025-11-25" {
		t.Errorf("implementation fields: %+v", m)
	}
	if len(m.Tools) != 1 {
		t.Fatalf("got %d tools", len(m.Tools))
	}
	tool := m.Tools[0]
	if tool.Name != "forecast.get" || tool.Title != "Get Forecast" {
		t.Errorf("tool: %+v", tool)
	}
	if string(tool.InputSchema) != forecastCanonical {
		t.Errorf("input schema = %s", tool.InputSchema)
	}
	if got := base64.StdEncoding.EncodeToString(tool.InputHash[:]); got != forecastHash {
		t.Errorf("input hash = %s, want %s", got, forecastHash)
	}
	const wantOutput = `{"properties":{"summary":{"type":"string"}},"required":["summary"],"type":"object"}`
	if string(tool.OutputSchema) != wantOutput {
		t.Errorf("output schema = %s", tool.OutputSchema)
	}
	if tool.OutputHash != sha256.Sum256([]byte(wantOutput)) {
		t.Error("output hash mismatch")
	}
	a := tool.Annotations
	if a.ReadOnly == nil || !*a.ReadOnly || a.Destructive == nil || *a.Destructive ||
		a.Idempotent == nil || !*a.Idempotent || a.OpenWorld == nil || !*a.OpenWorld {
		t.Errorf("annotations: %+v", a)
	}
	want := manifest.Extension{
		SupportsProgress:      true,
		SupportsCancellation:  true,
		DefaultTimeoutSeconds: 30,
		MaximumTimeoutSeconds: 120,
		RequiredPermissions:   []string{"weather.read"},
		Tags:                  []string{"weather", "forecast"},
	}
	e := tool.Ext
	if e.SupportsProgress != want.SupportsProgress || e.SupportsCancellation != want.SupportsCancellation ||
		e.SupportsInput || e.ApprovalRequired || e.DefaultTimeoutSeconds != 30 || e.MaximumTimeoutSeconds != 120 ||
		strings.Join(e.RequiredPermissions, ",") != "weather.read" || strings.Join(e.Tags, ",") != "weather,forecast" {
		t.Errorf("extension = %+v, want %+v", e, want)
	}
	if got, ok := m.Tool("forecast.get"); !ok || got.Name != "forecast.get" {
		t.Error("Tool lookup failed")
	}
	if _, ok := m.Tool("Forecast.get"); ok {
		t.Error("Tool lookup must be exact")
	}

	// The served bytes are canonical: canonicalizing them again is a no-op.
	again, err := manifest.Canonicalize(m.Canonical, manifest.Limits{})
	if err != nil || !bytes.Equal(again, m.Canonical) {
		t.Errorf("canonical form is not a fixed point: %v", err)
	}
}

func TestRichExample(t *testing.T) {
	m, err := manifest.Parse(readTestdata(t, "rich.json"), manifest.Options{Domain: "agents.example"})
	if err != nil {
		t.Fatal(err)
	}
	if m.Homepage != "https://files.example/docs?lang=en" || m.AvatarURL != "https://files.example/avatar.png" {
		t.Errorf("URIs: %q %q", m.Homepage, m.AvatarURL)
	}
	if len(m.Tools) != 2 || m.Tools[0].Name != "file.read" || m.Tools[1].Name != "file.write" {
		t.Fatalf("tools out of order: %+v", m.Tools)
	}
	read, write := m.Tools[0], m.Tools[1]
	if read.Annotations.Title != "Read File" || read.Annotations.Destructive != nil {
		t.Errorf("read annotations: %+v", read.Annotations)
	}
	if e := write.Ext; !e.SupportsInput || !e.ApprovalRequired || e.MaximumTimeoutSeconds != 600 {
		t.Errorf("write extension: %+v", e)
	}
	if write.OutputSchema != nil {
		t.Error("file.write has no output schema")
	}
	sch, err := manifest.CompileSchema(read.InputSchema, true, manifest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := sch.Validate(map[string]any{"path": ""}); err == nil {
		t.Error("the $anchor reference was not applied")
	}
}

func TestAbsentAnnotationsStayNil(t *testing.T) {
	raw := manifestWithTool(`{"name":"t","inputSchema":{"type":"object"},"annotations":{"readOnlyHint":false}}`)
	m, err := manifest.Parse([]byte(raw), manifest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	a := m.Tools[0].Annotations
	if a.ReadOnly == nil || *a.ReadOnly {
		t.Error("readOnlyHint false must be kept as a non-nil false")
	}
	if a.Destructive != nil || a.Idempotent != nil || a.OpenWorld != nil {
		t.Error("absent hints must be nil")
	}
	if m.Tools[0].OutputSchema != nil {
		t.Error("absent outputSchema must be nil")
	}
}

func TestEmbeddedSchemaMatchesTestdata(t *testing.T) {
	want, err := os.ReadFile(filepath.Join("..", "testdata", "manifest.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(manifest.ManifestSchema(), want) {
		t.Error("manifest/manifest.schema.json differs from testdata/manifest.schema.json")
	}
}

// manifestWithTool wraps tool definitions in an otherwise valid manifest.
func manifestWithTool(tools ...string) string {
	return `{"manifestSpecVersion":"0","agent":{"jid":"weather@agents.example","name":"weather","version":"1.4.0"},"tools":[` +
		strings.Join(tools, ",") + `]}`
}

// manifestWithAgent builds a manifest with the given agent members.
func manifestWithAgent(agent string) string {
	return `{"manifestSpecVersion":"0","agent":{` + agent + `},"tools":[]}`
}

const (
	okAgent   = `"jid":"weather@agents.example","name":"weather","version":"1.4.0"`
	objSchema = `"inputSchema":{"type":"object"}`
)

func TestParseRejects(t *testing.T) {
	deep := strings.Repeat(`{"a":`, 70) + `1` + strings.Repeat(`}`, 70)
	for _, tc := range []struct {
		name string
		raw  string
		opts manifest.Options
		kind manifest.Kind
		path string
		msg  string
	}{
		{"empty", ``, manifest.Options{}, manifest.KindMalformed, "", "empty document"},
		{"syntax", `{"a":}`, manifest.Options{}, manifest.KindMalformed, "", "invalid JSON syntax at byte offset"},
		{"trailing data", weatherCompact + `{}`, manifest.Options{}, manifest.KindMalformed, "", "unexpected data after the JSON value"},
		{"duplicate keys", `{"manifestSpecVersion":"0","agent":{"name":"a","name":"b"},"tools":[]}`, manifest.Options{},
			manifest.KindMalformed, "/agent", "duplicate object member name"},
		{"duplicate keys after unescaping", `{"agent":{"name":"a","n\u0061me":"b"}}`, manifest.Options{},
			manifest.KindMalformed, "/agent", "duplicate object member name"},
		{"lone surrogate", manifestWithAgent(`"jid":"weather@agents.example","name":"\ud800","version":"1"`), manifest.Options{},
			manifest.KindMalformed, "/agent/name", "lone surrogate"},
		{"lone low surrogate in a key", `{"\udc00":1}`, manifest.Options{}, manifest.KindMalformed, "", "lone surrogate"},
		{"reversed surrogate pair", `{"a":"\udc00\ud800"}`, manifest.Options{}, manifest.KindMalformed, "/a", "lone surrogate"},
		{"invalid UTF-8", "{\"a\":\"\xff\"}", manifest.Options{}, manifest.KindMalformed, "/a", "invalid UTF-8"},
		{"UTF-8 encoded surrogate", "{\"a\":\"\xed\xa0\x80\"}", manifest.Options{}, manifest.KindMalformed, "/a", "invalid UTF-8"},
		{"noncharacter U+FFFF", `{"a":"\uffff"}`, manifest.Options{}, manifest.KindMalformed, "/a", "not allowed in XML 1.0"},
		{"number out of range", manifestWithTool(`{"name":"t","inputSchema":{"type":"object","maximum":1e400}}`), manifest.Options{},
			manifest.KindMalformed, "/tools/0/inputSchema/maximum", "number out of double range"},
		{"http homepage", manifestWithAgent(okAgent + `,"homepage":"http://example.org/"`), manifest.Options{},
			manifest.KindInvalid, "/agent/homepage", "scheme must be https"},
		{"uppercase scheme", manifestWithAgent(okAgent + `,"homepage":"HTTPS://example.org/"`), manifest.Options{},
			manifest.KindInvalid, "/agent/homepage", "scheme must be https"},
		{"userinfo in homepage", manifestWithAgent(okAgent + `,"homepage":"https://user:pw@example.org/"`), manifest.Options{},
			manifest.KindInvalid, "/agent/homepage", "userinfo is not allowed"},
		{"empty host", manifestWithAgent(okAgent + `,"avatarUrl":"https:///a.png"`), manifest.Options{},
			manifest.KindInvalid, "/agent/avatarUrl", "non-empty host"},
		{"space in URI", manifestWithAgent(okAgent + `,"avatarUrl":"https://example.org/a b.png"`), manifest.Options{},
			manifest.KindInvalid, "/agent/avatarUrl", "not allowed by RFC 3986"},
		{"bad percent-encoding", manifestWithAgent(okAgent + `,"homepage":"https://example.org/%zz"`), manifest.Options{},
			manifest.KindInvalid, "/agent/homepage", "percent-encoding"},
		{"fragment in URI", manifestWithAgent(okAgent + `,"homepage":"https://example.org/#top"`), manifest.Options{},
			manifest.KindInvalid, "/agent/homepage", "without a fragment"},
		{"unsupported vocabulary", manifestWithTool(`{"name":"t","inputSchema":{"type":"object","$vocabulary":{"https://example.org/vocab":true}}}`),
			manifest.Options{}, manifest.KindInvalid, "/tools/0/inputSchema/$vocabulary", "$vocabulary https://example.org/vocab is required but unsupported"},
		{"non-object input root", manifestWithTool(`{"name":"t","inputSchema":{"type":"string"}}`), manifest.Options{},
			manifest.KindInvalid, "/tools/0/inputSchema", `root must be an object schema ("type":"object")`},
		{"input root without type", manifestWithTool(`{"name":"t","inputSchema":{}}`), manifest.Options{},
			manifest.KindInvalid, "/tools/0/inputSchema", `root must be an object schema`},
		{"oversize document", `{"a":"` + strings.Repeat("x", 2000000) + `"}`, manifest.Options{},
			manifest.KindTooLarge, "", "manifest is 2000008 bytes, limit is 1048576"},
		{"too deep", deep, manifest.Options{}, manifest.KindTooLarge, strings.Repeat("/a", 64), "nesting depth exceeds limit of 64"},
		{"long string", `{"a":"` + strings.Repeat("x", 70000) + `"}`, manifest.Options{},
			manifest.KindTooLarge, "/a", "string is 70000 bytes, limit is 65536"},
		{"too many members", `[` + strings.Repeat(`1,`, 4096) + `1]`, manifest.Options{},
			manifest.KindTooLarge, "", "array has more than 4096 elements"},
		{"long number", `{"a":1` + strings.Repeat("0", 200) + `}`, manifest.Options{},
			manifest.KindTooLarge, "/a", "number is 201 bytes long, limit is 128"},
		{"too many tools", manifestWithTool(`{}`, `{}`, `{}`), manifest.Options{Limits: manifest.Limits{MaxTools: 2}},
			manifest.KindTooLarge, "/tools", "manifest has 3 tools, limit is 2"},
		{"not an object", `[]`, manifest.Options{}, manifest.KindInvalid, "", "must be a JSON object"},
		{"unknown top-level member", `{"manifestSpecVersion":"0","agent":{` + okAgent + `},"tools":[],"extra":1}`, manifest.Options{},
			manifest.KindInvalid, "", `unknown member "extra"`},
		{"unsafe member name is not echoed", `{"manifestSpecVersion":"0","agent":{` + okAgent + `},"tools":[],"<script>":1}`, manifest.Options{},
			manifest.KindInvalid, "", `unknown member *`},
		{"wrong spec version", `{"manifestSpecVersion":"1","agent":{` + okAgent + `},"tools":[]}`, manifest.Options{},
			manifest.KindInvalid, "/manifestSpecVersion", "does not have the value the schema requires"},
		{"missing agent", `{"manifestSpecVersion":"0","tools":[]}`, manifest.Options{},
			manifest.KindInvalid, "", `missing required member "agent"`},
		{"bad version", manifestWithAgent(`"jid":"weather@agents.example","name":"weather","version":"1.4 beta"`), manifest.Options{},
			manifest.KindInvalid, "/agent/version", "invalid version"},
		{"long version", manifestWithAgent(`"jid":"weather@agents.example","name":"weather","version":"` + strings.Repeat("1", 65) + `"`), manifest.Options{},
			manifest.KindInvalid, "/agent/version", "invalid version"},
		{"description too long", manifestWithAgent(okAgent + `,"description":"` + strings.Repeat("d", 4097) + `"`), manifest.Options{},
			manifest.KindTooLarge, "/agent/description", "length 4097 exceeds the maximum of 4096"},
		{"control character in title", manifestWithAgent(okAgent + `,"title":"a\u0001b"`), manifest.Options{},
			manifest.KindInvalid, "/agent/title", "not allowed in XML 1.0"},
		{"duplicate tool names", manifestWithTool(`{"name":"a",`+objSchema+`}`, `{"name":"a",`+objSchema+`}`), manifest.Options{},
			manifest.KindInvalid, "/tools/1/name", "duplicate tool name"},
		{"empty tool name", manifestWithTool(`{"name":"",` + objSchema + `}`), manifest.Options{},
			manifest.KindInvalid, "/tools/0/name", "length 0 is below the minimum of 1"},
		{"XML-illegal tool name", manifestWithTool(`{"name":"a\u0000b",` + objSchema + `}`), manifest.Options{},
			manifest.KindInvalid, "/tools/0/name", "tool name must be nonempty and contain only characters allowed in XML 1.0"},
		{"unknown tool member", manifestWithTool(`{"name":"a",` + objSchema + `,"foo":1}`), manifest.Options{},
			manifest.KindInvalid, "/tools/0", `unknown member "foo"`},
		{"jid outside domain", manifestWithAgent(`"jid":"weather@other.example","name":"weather","version":"1"`),
			manifest.Options{Domain: "agents.example"}, manifest.KindDomain, "/agent/jid", "outside the component domain"},
		{"jid with resource", manifestWithAgent(`"jid":"weather@agents.example/res","name":"weather","version":"1"`), manifest.Options{},
			manifest.KindInvalid, "/agent/jid", "must be a bare JID"},
		{"jid without localpart", manifestWithAgent(`"jid":"agents.example","name":"weather","version":"1"`), manifest.Options{},
			manifest.KindInvalid, "/agent/jid", "must have a localpart"},
		{"invalid jid", manifestWithAgent(`"jid":"a@b@c","name":"weather","version":"1"`), manifest.Options{},
			manifest.KindInvalid, "/agent/jid", "not a valid JID"},
		{"file $ref", manifestWithTool(`{"name":"t","inputSchema":{"type":"object","$ref":"file:///etc/passwd"}}`), manifest.Options{},
			manifest.KindInvalid, "/tools/0/inputSchema", `external reference "file:///etc/passwd" is not allowed`},
		{"unknown keyword", manifestWithTool(`{"name":"t","inputSchema":{"type":"object","properties":{"a":{"frobnicate":3}}}}`), manifest.Options{},
			manifest.KindInvalid, "/tools/0/inputSchema/properties/a", `unsupported keyword "frobnicate"`},
		{"draft-07 $schema", manifestWithTool(`{"name":"t","inputSchema":{"$schema":"http://json-schema.org/draft-07/schema#","type":"object"}}`), manifest.Options{},
			manifest.KindInvalid, "/tools/0/inputSchema/$schema", "unsupported dialect draft-07"},
		{"lookbehind pattern", manifestWithTool(`{"name":"t","inputSchema":{"type":"object","properties":{"a":{"type":"string","pattern":"(?<=a)b"}}}}`), manifest.Options{},
			manifest.KindInvalid, "/tools/0/inputSchema/properties/a/pattern", "regular expression not supported"},
		{"bad output schema", manifestWithTool(`{"name":"t",` + objSchema + `,"outputSchema":{"type":"nope"}}`), manifest.Options{},
			manifest.KindInvalid, "/tools/0/outputSchema/type", "invalid schema"},
		{"default above maximum timeout", manifestWithTool(`{"name":"t",` + objSchema + `,"urn:xmpp:agent-api:0":{"defaultTimeoutSeconds":60,"maximumTimeoutSeconds":30}}`), manifest.Options{},
			manifest.KindInvalid, "/tools/0/urn:xmpp:agent-api:0/defaultTimeoutSeconds", "exceeds maximumTimeoutSeconds"},
		{"huge timeout", manifestWithTool(`{"name":"t",` + objSchema + `,"urn:xmpp:agent-api:0":{"maximumTimeoutSeconds":1e300}}`), manifest.Options{},
			manifest.KindInvalid, "/tools/0/urn:xmpp:agent-api:0/maximumTimeoutSeconds", "exceeds the maximum of 2147483647 seconds"},
		{"non-boolean hint", manifestWithTool(`{"name":"t",` + objSchema + `,"annotations":{"readOnlyHint":"yes"}}`), manifest.Options{},
			manifest.KindInvalid, "/tools/0/annotations/readOnlyHint", "must be a boolean"},
		{"duplicate tags", manifestWithTool(`{"name":"t",` + objSchema + `,"urn:xmpp:agent-api:0":{"tags":["a","a"]}}`), manifest.Options{},
			manifest.KindInvalid, "/tools/0/urn:xmpp:agent-api:0/tags", "items must be unique"},
		{"schema too large", manifestWithTool(`{"name":"t","inputSchema":{"type":"object","description":"` + strings.Repeat("d", 300) + `"}}`),
			manifest.Options{Limits: manifest.Limits{MaxSchemaBytes: 256}}, manifest.KindTooLarge, "/tools/0/inputSchema", "limit is 256"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := manifest.Parse([]byte(tc.raw), tc.opts)
			if err == nil {
				t.Fatalf("accepted: %s", m.Canonical)
			}
			t.Log(err)
			var e *manifest.Error
			if !errors.As(err, &e) {
				t.Fatalf("error %v is %T, not *manifest.Error", err, err)
			}
			if e.Kind != tc.kind {
				t.Errorf("kind = %v, want %v (%v)", e.Kind, tc.kind, err)
			}
			if e.Path != tc.path {
				t.Errorf("path = %q, want %q (%v)", e.Path, tc.path, err)
			}
			if !strings.Contains(e.Msg, tc.msg) {
				t.Errorf("message %q does not contain %q", e.Msg, tc.msg)
			}
			if len(err.Error()) > 400 {
				t.Errorf("message is %d bytes: not bounded", len(err.Error()))
			}
		})
	}
}

func TestParseAccepts(t *testing.T) {
	for _, tc := range []struct {
		name string
		raw  string
		opts manifest.Options
	}{
		{"https URIs", manifestWithAgent(okAgent + `,"homepage":"https://example.org/a?b=c%20d","avatarUrl":"https://[2001:db8::1]:8443/a.png"`), manifest.Options{}},
		{"domain normalization", manifestWithAgent(`"jid":"Weather@Agents.Example","name":"w","version":"1"`), manifest.Options{Domain: "agents.example"}},
		{"integral float timeout", manifestWithTool(`{"name":"t",` + objSchema + `,"urn:xmpp:agent-api:0":{"defaultTimeoutSeconds":30.0}}`), manifest.Options{}},
		{"extension member", manifestWithTool(`{"name":"t",` + objSchema + `,"https://example.org/ext":{"any":"thing"},"_meta":{"k":1}}`), manifest.Options{}},
		{"non-ASCII tool name", manifestWithTool(`{"name":"prévision 天気",` + objSchema + `}`), manifest.Options{}},
		{"underflow to zero", manifestWithTool(`{"name":"t","inputSchema":{"type":"object","x-tiny":1e-400}}`), manifest.Options{}},
		{"several tools", manifestWithTool(`{"name":"a",`+objSchema+`}`, `{"name":"b",`+objSchema+`}`), manifest.Options{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := manifest.Parse([]byte(tc.raw), tc.opts); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestNormalizedJID(t *testing.T) {
	raw := manifestWithAgent(`"jid":"Weather@Agents.Example","name":"w","version":"1"`)
	m, err := manifest.Parse([]byte(raw), manifest.Options{Domain: "AGENTS.example"})
	if err != nil {
		t.Fatal(err)
	}
	if m.JID != "weather@agents.example" {
		t.Errorf("JID = %q", m.JID)
	}
	if !strings.Contains(string(m.Canonical), "Weather@Agents.Example") {
		t.Error("canonical form must keep the registered spelling")
	}
}

func TestBadDomainOption(t *testing.T) {
	_, err := manifest.Parse([]byte(weatherCompact), manifest.Options{Domain: "user@agents.example"})
	var e *manifest.Error
	if err == nil || errors.As(err, &e) {
		t.Fatalf("a bad Options.Domain must be a local fault, got %v", err)
	}
}

func TestErrorFormat(t *testing.T) {
	e := &manifest.Error{Kind: manifest.KindInvalid, Path: "/tools/1/name", Msg: "duplicate tool name"}
	if got := e.Error(); got != "manifest: /tools/1/name: duplicate tool name" {
		t.Errorf("Error() = %q", got)
	}
	e.Path = ""
	if got := e.Error(); got != "manifest: duplicate tool name" {
		t.Errorf("Error() = %q", got)
	}
	for k, s := range map[manifest.Kind]string{
		manifest.KindMalformed: "malformed", manifest.KindInvalid: "invalid",
		manifest.KindTooLarge: "too-large", manifest.KindDomain: "domain", 0: "unknown",
	} {
		if k.String() != s {
			t.Errorf("Kind(%d).String() = %q, want %q", k, k.String(), s)
		}
	}
}

func TestDefaultLimits(t *testing.T) {
	l := manifest.DefaultLimits()
	if l.MaxManifestBytes != 1<<20 || l.MaxSchemaBytes != 256<<10 || l.MaxDepth != 64 || l.MaxTools != 1024 {
		t.Errorf("DefaultLimits() = %+v", l)
	}
}

func ExampleParse() {
	raw := []byte(`{"manifestSpecVersion":"0","agent":{"jid":"weather@agents.example","name":"weather","version":"1.4.0"},"tools":[]}`)
	m, err := manifest.Parse(raw, manifest.Options{Domain: "agents.example"})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(m.JID, m.Version, m.HashBase64())
	fmt.Printf("%s\n", m.Canonical)

	_, err = manifest.Parse([]byte(`{"manifestSpecVersion":"0","agent":{"jid":"weather@agents.example","name":"weather","version":"1.4.0"},"tools":[{"name":"a","inputSchema":{"type":"object"}},{"name":"a","inputSchema":{"type":"object"}}]}`), manifest.Options{})
	var e *manifest.Error
	if errors.As(err, &e) {
		fmt.Println(e.Kind, e.Path, e.Msg)
	}
	// Output:
	// weather@agents.example 1.4.0 K2/YdwvIBAlfUIeZHiNCyiYA4m4W2wrEOqXQDoQyXp4=
	// {"agent":{"jid":"weather@agents.example","name":"weather","version":"1.4.0"},"manifestSpecVersion":"0","tools":[]}
	// invalid /tools/1/name duplicate tool name
}

func BenchmarkParse(b *testing.B) {
	raw := readTestdata(b, "weather-full.json")
	opts := manifest.Options{Domain: "agents.example"}
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := manifest.Parse(raw, opts); err != nil {
			b.Fatal(err)
		}
	}
}
