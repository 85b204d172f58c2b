package adhoc_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"agentgw/adhoc"
)

func TestResultForm(t *testing.T) {
	out := `{"type":"object","required":["counted"],"properties":{"counted":{"type":"integer","title":"Counted"},"extra":{"type":"object"}}}`
	for _, tc := range []struct {
		name, result, schema string
		want                 string
		notes                []string
	}{
		{"by output schema", `{"content":[{"type":"text","text":"Counted to 3."}],"structuredContent":{"zeta":"z","extra":{"a":[1]},"counted":3}}`, out,
			`<x type='result' xmlns='jabber:x:data'><title>Count</title><field label='Counted' type='text-single' var='counted'><value>3</value></field>` +
				`<field label='extra' type='text-multi' var='extra'><value>{</value><value>  "a": [</value><value>    1</value><value>  ]</value><value>}</value></field>` +
				`<field label='zeta' type='text-single' var='zeta'><value>z</value></field></x>`,
			[]string{"info: Counted to 3."}},
		{"without schema", `{"content":[],"structuredContent":{"ok":true,"lines":"a\nb","list":["x",2]}}`, ``,
			`<x type='result' xmlns='jabber:x:data'><title>Count</title><field label='lines' type='text-multi' var='lines'><value>a</value><value>b</value></field>` +
				`<field label='list' type='text-multi' var='list'><value>x</value><value>2</value></field><field label='ok' type='boolean' var='ok'><value>1</value></field></x>`,
			nil},
		{"not an object", `{"content":[],"structuredContent":[1,2]}`, ``,
			`<x type='result' xmlns='jabber:x:data'><title>Count</title><field label='Result' type='text-multi' var='result'><value>[</value><value>  1,</value><value>  2</value><value>]</value></field></x>`,
			nil},
		{"error", `{"content":[{"type":"text","text":"no such city"}],"isError":true}`, out, ``, []string{"error: no such city"}},
		{"error without text", `{"content":[],"isError":true}`, out, ``, []string{"error: The tool reported an error."}},
		{"nothing", `{"content":[]}`, ``, ``, []string{"info: The tool completed without content."}},
	} {
		f, notes := adhoc.ResultForm([]byte(tc.result), []byte(tc.schema), "Count")
		got := ""
		if f != nil {
			got = marshal(t, f.TokenReader())
			formXSD(t, got)
		}
		if got != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.name, got, tc.want)
		}
		var ns []string
		for _, n := range notes {
			ns = append(ns, n.Type+": "+n.Text)
		}
		if strings.Join(ns, "|") != strings.Join(tc.notes, "|") {
			t.Errorf("%s: notes %q, want %q", tc.name, ns, tc.notes)
		}
	}
}

// TestResultWithinStanzaLimit: a result far over the budget is cut, with
// a warning, and the whole command stays within MaxResponseBytes.
func TestResultWithinStanzaLimit(t *testing.T) {
	big := strings.Repeat("é", 200<<10)
	result := `{"content":[{"type":"text","text":"` + big + `"}],"structuredContent":{"a":"` + big + `","b":"` + big + `"}}`
	f, notes := adhoc.ResultForm([]byte(result), nil, "Big")
	c := adhoc.Command{Node: "big", SessionID: "s", Status: adhoc.StatusCompleted, Notes: notes, Form: f}
	doc := marshal(t, c.TokenReader())
	if len(doc) > adhoc.MaxResponseBytes {
		t.Errorf("response of %d bytes, limit %d", len(doc), adhoc.MaxResponseBytes)
	}
	if !utf8.ValidString(doc) {
		t.Error("cut inside a character")
	}
	commandXSD(t, doc)
	if len(notes) != 2 || notes[1].Type != adhoc.NoteWarn || utf8.RuneCountInString(notes[0].Text) > adhoc.MaxNoteChars {
		t.Errorf("notes: %d, first of %d characters", len(notes), utf8.RuneCountInString(notes[0].Text))
	}
	if len(f.Fields) != 1 || !strings.HasSuffix(f.Fields[0].Values[0], "[truncated]") {
		t.Errorf("fields: %d", len(f.Fields))
	}
}

// TestResultManyKeys: thousands of keys are cut by the same budget as
// long values.
func TestResultManyKeys(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"content":[{"type":"text","text":"` + strings.Repeat("𝄞", 5000) + `"}],"isError":true,"structuredContent":{`)
	for i := 0; i < 20000; i++ {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(`"key-` + strings.Repeat("k", 40) + string(rune('a'+i%26)) + strings.Repeat("x", i%7) + `-` + strings.Repeat("0", i%5) + `":1`)
	}
	b.WriteString("}}")
	f, notes := adhoc.ResultForm([]byte(b.String()), nil, "Keys")
	c := adhoc.Command{Node: "keys", SessionID: "s", Status: adhoc.StatusCompleted, Notes: notes, Form: f}
	doc := marshal(t, c.TokenReader())
	if len(doc) > adhoc.MaxResponseBytes {
		t.Errorf("response of %d bytes, limit %d", len(doc), adhoc.MaxResponseBytes)
	}
	if len(notes) != 2 || notes[0].Type != adhoc.NoteError || notes[1].Type != adhoc.NoteWarn {
		t.Errorf("notes: %+v", len(notes))
	}
	commandXSD(t, doc)
}
