package search_test

import (
	"encoding/xml"
	"fmt"
	"io"
	"strings"
	"testing"

	"agentgw/adhoc"
	"agentgw/search"
	"agentgw/wire"

	"mellium.im/xmlstream"
)

// BenchmarkForms measures the data-forms paths that the surfaces run per
// request, through their public entry points only (so the same file runs
// against an older tree, for a before/after comparison in one run):
//
//   - parse/search-submission: a search set's <query/> with its form
//     (search.ParseRequest), on the gateway's hot path;
//   - parse/command-submission: an ad-hoc <command/> whose form submits
//     six fields (adhoc.ParseCommand);
//   - parse/search-result-50: a client reading a 50-item result form
//     (search.ParseResult);
//   - parse/disco-info: a client reading a disco#info result with an
//     extended-info form of eight fields (wire.ParseInfoResult);
//   - encode/search-result-50: a 50-item result page encoded as the
//     gateway writes it;
//   - encode/command-form: a six-field command form with descriptions,
//     options and XEP-0122 validation.
func BenchmarkForms(b *testing.B) {
	submission := benchParse(b, `<query xmlns='jabber:iq:search'><set xmlns='http://jabber.org/protocol/rsm'><max>50</max></set>`+
		`<x xmlns='jabber:x:data' type='submit'><field var='FORM_TYPE' type='hidden'><value>jabber:iq:search</value></field>`+
		`<field var='nick'><value>weather</value></field></x></query>`)
	var cmd strings.Builder
	cmd.WriteString(`<command xmlns='http://jabber.org/protocol/commands' node='forecast' sessionid='ah1' action='complete'><x xmlns='jabber:x:data' type='submit'>`)
	for i := range 6 {
		fmt.Fprintf(&cmd, `<field var='f%d'><value>value %d</value></field>`, i, i)
	}
	cmd.WriteString(`</x></command>`)
	command := benchParse(b, cmd.String())

	items := make([]search.Item, 50)
	for i := range items {
		items[i] = search.Item{JID: fmt.Sprintf("a%06d@agents.example", i), Nick: fmt.Sprintf("Agent %06d Météo", i)}
	}
	page := search.Result{Items: items}
	resultXML, err := wire.Marshal(page.TokenReader())
	if err != nil {
		b.Fatal(err)
	}
	result := benchParse(b, resultXML)

	var info strings.Builder
	info.WriteString(`<query xmlns='http://jabber.org/protocol/disco#info'><identity category='automation' type='agent' name='Weather'/>` +
		`<feature var='urn:xmpp:agent-api:0'/><x xmlns='jabber:x:data' type='result'><field var='FORM_TYPE' type='hidden'><value>urn:xmpp:agent-api:0#endpoint-info</value></field>`)
	for i := range 8 {
		fmt.Fprintf(&info, `<field var='k%d'><value>v%d</value></field>`, i, i)
	}
	info.WriteString(`</x></query>`)
	disco := benchParse(b, info.String())

	form := adhoc.Form{Type: adhoc.FormForm, Title: "Forecast", Instructions: []string{"Fill in the arguments."}}
	for i := range 6 {
		fl := adhoc.Field{Var: fmt.Sprintf("f%d", i), Type: adhoc.FieldTextSingle, Label: fmt.Sprintf("Field %d", i), Desc: "a value", Required: i%2 == 0}
		switch i % 3 {
		case 1:
			fl.Type, fl.Options = adhoc.FieldListSingle, []adhoc.Option{{Label: "A", Value: "a"}, {Label: "B", Value: "b"}}
		case 2:
			fl.Validate = &adhoc.Validate{Datatype: "xs:integer", Range: &adhoc.Range{Min: "0", Max: "99"}}
		}
		form.Fields = append(form.Fields, fl)
	}

	for _, bc := range []struct {
		name string
		run  func() error
	}{
		{"parse/search-submission", func() error { _, err := search.ParseRequest(submission); return err }},
		{"parse/command-submission", func() error { _, err := adhoc.ParseCommand(command); return err }},
		{"parse/search-result-50", func() error { _, err := search.ParseResult(result); return err }},
		{"parse/disco-info", func() error { _, err := wire.ParseInfoResult(disco); return err }},
		{"encode/search-result-50", func() error { return benchEncode(page.TokenReader()) }},
		{"encode/command-form", func() error { return benchEncode(form.TokenReader()) }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := bc.run(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func benchParse(b *testing.B, s string) wire.Element {
	b.Helper()
	el, err := wire.Parse(s)
	if err != nil {
		b.Fatal(err)
	}
	return el
}

func benchEncode(r xml.TokenReader) error {
	enc := xml.NewEncoder(io.Discard)
	if _, err := xmlstream.Copy(enc, r); err != nil {
		return err
	}
	return enc.Flush()
}
