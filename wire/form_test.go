package wire_test

import (
	"errors"
	"fmt"
	"reflect"
	"testing"

	"agentgw/wire"
)

var searchColumns = []wire.Field{
	{Var: "jid", Type: "jid-single", Label: "Jabber ID"},
	{Var: "nick", Type: "text-single", Label: "Nickname"},
}

// TestMultiResultRoundTrip checks each value against its XML, and that
// parsing the XML gives back the value.
func TestMultiResultRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name string
		v    wire.Form
		xml  string
	}{
		{"no items", wire.Form{Type: wire.FormResult, Reported: searchColumns},
			`<x type='result' xmlns='jabber:x:data'><reported><field label='Jabber ID' type='jid-single' var='jid'/><field label='Nickname' type='text-single' var='nick'/></reported></x>`},
		{"two items", wire.Form{Type: wire.FormResult, Reported: searchColumns, Items: [][]wire.Field{
			{{Var: "jid", Values: []string{"weather@agents.example"}}, {Var: "nick", Values: []string{"Weather <&> 'Agent'"}}},
			{{Var: "jid", Values: []string{"météo@agents.example"}}, {Var: "nick", Values: []string{"Météo"}}},
		}}, `<x type='result' xmlns='jabber:x:data'><reported><field label='Jabber ID' type='jid-single' var='jid'/><field label='Nickname' type='text-single' var='nick'/></reported>` +
			`<item><field var='jid'><value>weather@agents.example</value></field><field var='nick'><value>Weather &lt;&amp;&gt; 'Agent'</value></field></item>` +
			`<item><field var='jid'><value>météo@agents.example</value></field><field var='nick'><value>Météo</value></field></item></x>`},
		{"sparse and multi-valued", wire.Form{Type: wire.FormResult,
			Reported: []wire.Field{{Var: "a"}, {Var: "b", Type: "list-multi"}},
			Items: [][]wire.Field{
				{{Var: "b", Values: []string{"1", "2"}}},
				nil,
				{{Var: "a"}},
			},
		}, `<x type='result' xmlns='jabber:x:data'><reported><field var='a'/><field type='list-multi' var='b'/></reported>` +
			`<item><field var='b'><value>1</value><value>2</value></field></item><item/><item><field var='a'/></item></x>`},
	} {
		got, err := wire.Marshal(tc.v.TokenReader())
		if err != nil {
			t.Fatal(err)
		}
		if got != tc.xml {
			t.Errorf("%s:\n got %s\nwant %s", tc.name, got, tc.xml)
			continue
		}
		el, err := wire.Parse(got)
		if err != nil {
			t.Fatalf("%s: reparse: %v", tc.name, err)
		}
		back, err := wire.ParseMultiResult(el)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if !reflect.DeepEqual(back, tc.v) {
			t.Errorf("%s: round trip gave\n%+v\nwant\n%+v", tc.name, back, tc.v)
		}
	}
}

// TestMultiResultWritesOnlyWhatBelongs: reported fields carry no values and
// item fields no type or label, whatever the value holds.
func TestMultiResultWritesOnlyWhatBelongs(t *testing.T) {
	v := wire.Form{Type: wire.FormResult,
		Reported: []wire.Field{{Var: "a", Type: "text-single", Values: []string{"x"}}},
		Items:    [][]wire.Field{{{Var: "a", Type: "text-single", Label: "A", Values: []string{"y"}}}},
	}
	got, err := wire.Marshal(v.TokenReader())
	if err != nil {
		t.Fatal(err)
	}
	want := `<x type='result' xmlns='jabber:x:data'><reported><field type='text-single' var='a'/></reported><item><field var='a'><value>y</value></field></item></x>`
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

func TestParseMultiResultRejects(t *testing.T) {
	const rep = `<reported><field var='jid'/><field var='nick'/></reported>`
	for _, body := range []string{
		`<x xmlns='jabber:x:data' type='form'>` + rep + `</x>`,
		`<x xmlns='jabber:x:data'>` + rep + `</x>`,
		`<x xmlns='urn:other' type='result'>` + rep + `</x>`,
		`<x xmlns='jabber:x:data' type='result'/>`,
		`<x xmlns='jabber:x:data' type='result'><title>T</title>` + rep + `</x>`,
		`<x xmlns='jabber:x:data' type='result'>` + rep + `<title>T</title></x>`,
		`<x xmlns='jabber:x:data' type='result'>` + rep + `<field var='jid'/></x>`,
		`<x xmlns='jabber:x:data' type='result'>` + rep + rep + `</x>`,
		`<x xmlns='jabber:x:data' type='result'><item/>` + rep + `</x>`,
		`<x xmlns='jabber:x:data' type='result'><reported><field/></reported></x>`,
		`<x xmlns='jabber:x:data' type='result'><reported><field var='a'/><field var='a'/></reported></x>`,
		`<x xmlns='jabber:x:data' type='result'><reported><field var='a'><value>v</value></field></reported></x>`,
		`<x xmlns='jabber:x:data' type='result'>` + rep + `<item><field var='email'><value>v</value></field></item></x>`,
		`<x xmlns='jabber:x:data' type='result'>` + rep + `<item><field var='jid'/><field var='jid'/></item></x>`,
		`<x xmlns='jabber:x:data' type='result'>` + rep + `<item><field var='jid'><value><b/></value></field></item></x>`,
		`<x xmlns='jabber:x:data' type='result'>` + rep + `<item><field var='jid'><option/></field></item></x>`,
		`<x xmlns='jabber:x:data' type='result'>` + rep + `<item><other xmlns='urn:x'/></item></x>`,
	} {
		el, err := wire.Parse(body)
		if err != nil {
			t.Fatal(err)
		}
		var bad wire.ErrBadForm
		if _, err := wire.ParseMultiResult(el); !errors.As(err, &bad) {
			t.Errorf("%s: err = %v, want ErrBadForm", body, err)
		}
	}
}

func ExampleParseMultiResult() {
	form := wire.Form{Type: wire.FormResult,
		Reported: []wire.Field{{Var: "jid", Type: "jid-single", Label: "Jabber ID"}},
		Items:    [][]wire.Field{{{Var: "jid", Values: []string{"weather@agents.example"}}}},
	}
	out, _ := wire.Marshal(form.TokenReader())
	fmt.Println(out)
	// Output:
	// <x type='result' xmlns='jabber:x:data'><reported><field label='Jabber ID' type='jid-single' var='jid'/></reported><item><field var='jid'><value>weather@agents.example</value></field></item></x>
}

// TestParseFormRules covers what each rule tolerates that the strict
// reading refuses.
func TestParseFormRules(t *testing.T) {
	const (
		ft      = `<field var='FORM_TYPE' type='hidden'><value>urn:x</value></field>`
		foreign = `<field var='a'><value>1</value><ext xmlns='urn:ext'/></field>`
	)
	form := func(body string) string { return `<x xmlns='jabber:x:data' type='result'>` + body + `</x>` }
	for _, tc := range []struct {
		name  string
		xml   string
		rules wire.FormRules
		ok    bool
	}{
		{"strict", form(ft + `<field var='a'/>`), wire.FormRules{}, true},
		{"fixed field without var", form(`<field type='fixed'><value>note</value></field>`), wire.FormRules{}, true},
		{"field without var", form(`<field><value>x</value></field>`), wire.FormRules{}, false},
		{"no type", `<x xmlns='jabber:x:data'/>`, wire.FormRules{}, false},
		{"no type, lax", `<x xmlns='jabber:x:data'/>`, wire.FormRules{Lax: true}, true},
		{"foreign child of a field", form(foreign), wire.FormRules{}, false},
		{"foreign child of a field, extensions", form(foreign), wire.FormRules{Extensions: true}, true},
		{"unknown data-forms child of a field, extensions", form(`<field var='a'><bogus/></field>`), wire.FormRules{Extensions: true}, false},
		{"desc, values only", form(`<field var='a'><desc>d</desc></field>`), wire.FormRules{ValuesOnly: true}, false},
		{"FORM_TYPE twice", form(ft + ft), wire.FormRules{}, false},
		{"FORM_TYPE twice, lax", form(ft + ft), wire.FormRules{Lax: true}, true},
		{"markup in title", form(`<title><b/></title>`), wire.FormRules{}, false},
		{"markup in title, lax", form(`<title>t<b/></title>`), wire.FormRules{Lax: true}, true},
		{"item without reported", form(`<item><field var='a'/></item>`), wire.FormRules{}, false},
		{"item without reported, lax", form(`<item><field var='a'/></item>`), wire.FormRules{Lax: true}, true},
		{"option without value", form(`<field var='a' type='list-single'><option/></field>`), wire.FormRules{}, false},
		{"unknown validation", form(`<field var='a'><validate xmlns='http://jabber.org/protocol/xdata-validate'><regex>x</regex></validate></field>`), wire.FormRules{}, false},
	} {
		el, err := wire.Parse(tc.xml)
		if err != nil {
			t.Fatal(err)
		}
		_, err = wire.ParseForm(el, tc.rules)
		var bad wire.ErrBadForm
		switch {
		case tc.ok && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case !tc.ok && !errors.As(err, &bad):
			t.Errorf("%s: err = %v, want ErrBadForm", tc.name, err)
		}
	}

	// Lax lifts the first FORM_TYPE with a value and keeps the rest as
	// fields, as extended disco#info from elsewhere may repeat it.
	el, _ := wire.Parse(form(`<field var='FORM_TYPE'/>` + ft + `<field var='FORM_TYPE'><value>urn:y</value></field>`))
	f, err := wire.ParseForm(el, wire.FormRules{Lax: true})
	if err != nil || f.FormType != "urn:x" || len(f.Fields) != 2 || f.Fields[1].Values[0] != "urn:y" {
		t.Errorf("lax FORM_TYPE: %+v %v", f, err)
	}
	// Strictly read, an extension is skipped, not kept.
	el, _ = wire.Parse(form(foreign))
	if f, err := wire.ParseForm(el, wire.FormRules{Extensions: true}); err != nil || !reflect.DeepEqual(f.Fields, []wire.Field{{Var: "a", Values: []string{"1"}}}) {
		t.Errorf("extension: %+v %v", f, err)
	}
}
