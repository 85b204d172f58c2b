package legacy_test

import (
	"crypto/sha256"
	"encoding/xml"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"agentgw/db"
	"agentgw/legacy"
	"agentgw/wire"
)

var update = flag.Bool("update", false, "rewrite golden files")

// golden compares got with testdata/golden/NAME.xml at the module root,
// rewriting it under -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("..", "testdata", "golden", name+".xml")
	if *update {
		if err := os.WriteFile(path, []byte(got+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("golden %s: %v (run with -update)", name, err)
	}
	if strings.TrimSpace(string(want)) != got {
		t.Errorf("%s:\n got %s\nwant %s", name, got, strings.TrimSpace(string(want)))
	}
}

func marshal(t *testing.T, r xml.TokenReader) string {
	t.Helper()
	s, err := wire.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func parse(t *testing.T, s string) wire.Element {
	t.Helper()
	el, err := wire.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return el
}

// version is a stored manifest version as the store returns it.
func version(canonical string) db.Version {
	return db.Version{
		JID:         "weather@agents.example",
		Version:     "1.4.0",
		Hash:        sha256.Sum256([]byte(canonical)),
		Canonical:   []byte(canonical),
		Name:        "weather",
		Title:       "Weather Agent",
		Description: "Provides weather forecasts & <warnings>.",
	}
}

const fullManifest = `{"agent":{"avatarUrl":"https://example.com/avatars/weather.png?size=96&fmt=png","description":"Provides weather forecasts & <warnings>.","homepage":"https://example.com/weather","jid":"weather@agents.example","name":"weather","title":"Weather Agent","vendor":"Example","version":"1.4.0"},"manifestSpecVersion":"0","tools":[]}`

func TestProfileOf(t *testing.T) {
	p, err := legacy.ProfileOf(version(fullManifest))
	if err != nil {
		t.Fatal(err)
	}
	want := legacy.Profile{
		Name: "weather", Title: "Weather Agent", Description: "Provides weather forecasts & <warnings>.",
		Homepage: "https://example.com/weather", AvatarURL: "https://example.com/avatars/weather.png?size=96&fmt=png",
	}
	if p != want {
		t.Errorf("ProfileOf = %+v, want %+v", p, want)
	}

	// Member names match exactly: a differently cased member is not the
	// homepage, and absent URLs stay empty.
	v := version(`{"agent":{"Homepage":"https://evil.example/","jid":"weather@agents.example","name":"weather","version":"1"},"manifestSpecVersion":"0","tools":[]}`)
	v.Title = ""
	p, err = legacy.ProfileOf(v)
	if err != nil || p.Homepage != "" || p.AvatarURL != "" || p.DisplayName() != "weather" {
		t.Errorf("ProfileOf = %+v, %v", p, err)
	}

	for _, bad := range []string{`not json`, `{"agent":"x"}`, `{"agent":{"homepage":1}}`} {
		if _, err := legacy.ProfileOf(version(bad)); err == nil {
			t.Errorf("ProfileOf(%s) succeeded", bad)
		}
	}
}

// TestVCardGolden checks both vCards of a full profile against their golden
// files, and that parsing the golden XML gives back the same value.
func TestVCardGolden(t *testing.T) {
	p, err := legacy.ProfileOf(version(fullManifest))
	if err != nil {
		t.Fatal(err)
	}
	temp := p.VCardTemp()
	got := marshal(t, temp.TokenReader())
	golden(t, "vcard-temp", got)
	if back, err := legacy.ParseVCardTemp(parse(t, got)); err != nil || back != temp {
		t.Errorf("vcard-temp round trip: %+v, %v; want %+v", back, err, temp)
	}

	v4 := p.VCard4()
	got = marshal(t, v4.TokenReader())
	golden(t, "vcard4", got)
	if back, err := legacy.ParseVCard4(parse(t, got)); err != nil || back != v4 {
		t.Errorf("vCard4 round trip: %+v, %v; want %+v", back, err, v4)
	}
}

// TestVCardRoundTrip is the {value, XML} table of both wire types, each
// parsed back to its value.
func TestVCardRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name string
		v    legacy.VCardTemp
		xml  string
	}{
		{"empty", legacy.VCardTemp{}, `<vCard xmlns='vcard-temp'/>`},
		{"name only", legacy.VCardTemp{FN: "w", Nickname: "w"}, `<vCard xmlns='vcard-temp'><FN>w</FN><NICKNAME>w</NICKNAME></vCard>`},
		{"photo", legacy.VCardTemp{FN: "W", PhotoExtval: "https://a.example/p.png"},
			`<vCard xmlns='vcard-temp'><FN>W</FN><PHOTO><EXTVAL>https://a.example/p.png</EXTVAL></PHOTO></vCard>`},
		{"url and desc", legacy.VCardTemp{URL: "https://a.example/?a=1&b=2", Desc: "a < b"},
			`<vCard xmlns='vcard-temp'><URL>https://a.example/?a=1&amp;b=2</URL><DESC>a &lt; b</DESC></vCard>`},
	} {
		if got := marshal(t, tc.v.TokenReader()); got != tc.xml {
			t.Errorf("%s: marshal\n got %s\nwant %s", tc.name, got, tc.xml)
		}
		if back, err := legacy.ParseVCardTemp(parse(t, tc.xml)); err != nil || back != tc.v {
			t.Errorf("%s: parse = %+v, %v", tc.name, back, err)
		}
	}
	for _, tc := range []struct {
		name string
		v    legacy.VCard4
		xml  string
	}{
		{"empty", legacy.VCard4{}, `<vcard xmlns='urn:ietf:params:xml:ns:vcard-4.0'/>`},
		{"text", legacy.VCard4{FN: "W", Nickname: "w", Note: "n & m"},
			`<vcard xmlns='urn:ietf:params:xml:ns:vcard-4.0'><fn><text>W</text></fn><nickname><text>w</text></nickname><note><text>n &amp; m</text></note></vcard>`},
		{"uris", legacy.VCard4{URL: "https://a.example/", PhotoURI: "https://a.example/p.png"},
			`<vcard xmlns='urn:ietf:params:xml:ns:vcard-4.0'><url><uri>https://a.example/</uri></url><photo><uri>https://a.example/p.png</uri></photo></vcard>`},
	} {
		if got := marshal(t, tc.v.TokenReader()); got != tc.xml {
			t.Errorf("%s: marshal\n got %s\nwant %s", tc.name, got, tc.xml)
		}
		if back, err := legacy.ParseVCard4(parse(t, tc.xml)); err != nil || back != tc.v {
			t.Errorf("%s: parse = %+v, %v", tc.name, back, err)
		}
	}
}

// TestParseVCardLenient: parsers keep the first of a repeated property,
// skip what they do not hold, and refuse another element.
func TestParseVCardLenient(t *testing.T) {
	v, err := legacy.ParseVCardTemp(parse(t, `<vCard xmlns='vcard-temp'><N><GIVEN>x</GIVEN></N><FN>one</FN><FN>two</FN><PHOTO><TYPE>image/png</TYPE><BINVAL>AAAA</BINVAL></PHOTO><x:URL xmlns:x='urn:other'>https://no.example/</x:URL></vCard>`))
	if err != nil || v != (legacy.VCardTemp{FN: "one"}) {
		t.Errorf("ParseVCardTemp = %+v, %v", v, err)
	}
	v4, err := legacy.ParseVCard4(parse(t, `<vcard xmlns='urn:ietf:params:xml:ns:vcard-4.0'><kind><text>application</text></kind><url><uri>https://1.example/</uri></url><url><uri>https://2.example/</uri></url></vcard>`))
	if err != nil || v4 != (legacy.VCard4{URL: "https://1.example/"}) {
		t.Errorf("ParseVCard4 = %+v, %v", v4, err)
	}
	if _, err := legacy.ParseVCardTemp(parse(t, `<vcard xmlns='vcard-temp'/>`)); !errors.Is(err, legacy.ErrNotVCard) {
		t.Errorf("ParseVCardTemp of <vcard/>: %v", err)
	}
	if _, err := legacy.ParseVCard4(parse(t, `<vCard xmlns='vcard-temp'/>`)); !errors.Is(err, legacy.ErrNotVCard) {
		t.Errorf("ParseVCard4 of vcard-temp: %v", err)
	}
}

func ExampleProfile_VCardTemp() {
	p := legacy.Profile{Name: "weather", Title: "Weather Agent", AvatarURL: "https://example.com/w.png"}
	s, _ := wire.Marshal(p.VCardTemp().TokenReader())
	os.Stdout.WriteString(s + "\n")
	// Output:
	// <vCard xmlns='vcard-temp'><FN>Weather Agent</FN><NICKNAME>weather</NICKNAME><PHOTO><EXTVAL>https://example.com/w.png</EXTVAL></PHOTO></vCard>
}
