package adhoc_test

import (
	"errors"
	"reflect"
	"testing"

	"agentgw/adhoc"
)

func TestCommandRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name string
		v    adhoc.Command
		xml  string
	}{
		{"execute request", adhoc.Command{Node: "echo", Action: adhoc.ActionExecute},
			`<command action='execute' node='echo' xmlns='http://jabber.org/protocol/commands'/>`},
		{"submission", adhoc.Command{Node: "echo", SessionID: "s1", Action: adhoc.ActionComplete,
			Form: &adhoc.Form{Type: adhoc.FormSubmit, Fields: []adhoc.Field{{Var: "text", Values: []string{"hi"}}}}},
			`<command action='complete' node='echo' sessionid='s1' xmlns='http://jabber.org/protocol/commands'><x type='submit' xmlns='jabber:x:data'><field var='text'><value>hi</value></field></x></command>`},
		{"executing response", adhoc.Command{Node: "count", SessionID: "s2", Status: adhoc.StatusExecuting,
			Actions: &adhoc.Actions{Execute: adhoc.ActionNext, Next: true},
			Notes:   []adhoc.Note{{Type: adhoc.NoteInfo, Text: "running"}}},
			`<command node='count' sessionid='s2' status='executing' xmlns='http://jabber.org/protocol/commands'><actions execute='next'><next/></actions><note type='info'>running</note></command>`},
		{"all actions, untyped note", adhoc.Command{Node: "n", Status: adhoc.StatusCompleted,
			Actions: &adhoc.Actions{Prev: true, Next: true, Complete: true}, Notes: []adhoc.Note{{Text: "done"}}},
			`<command node='n' status='completed' xmlns='http://jabber.org/protocol/commands'><actions><prev/><next/><complete/></actions><note>done</note></command>`},
	} {
		got := marshal(t, tc.v.TokenReader())
		if got != tc.xml {
			t.Errorf("%s:\n got %s\nwant %s", tc.name, got, tc.xml)
			continue
		}
		commandXSD(t, got)
		back, err := adhoc.ParseCommand(parse(t, got))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if !reflect.DeepEqual(back, tc.v) {
			t.Errorf("%s: round trip\n got %+v\nwant %+v", tc.name, back, tc.v)
		}
	}
}

func TestFormRoundTrip(t *testing.T) {
	f := adhoc.Form{Type: adhoc.FormForm, Title: "T", Instructions: []string{"one", "two"}, Fields: []adhoc.Field{
		{Var: "s", Type: adhoc.FieldTextSingle, Label: "S", Desc: "a string", Required: true, Values: []string{"v"}},
		{Var: "e", Type: adhoc.FieldListSingle, Options: []adhoc.Option{{Label: "A", Value: "a"}, {Value: "b"}}},
		{Var: "n", Type: adhoc.FieldTextSingle, Validate: &adhoc.Validate{Datatype: "xs:integer", Range: &adhoc.Range{Min: "0", Max: "9"}}},
		{Var: "d", Type: adhoc.FieldTextSingle, Validate: &adhoc.Validate{Datatype: "xs:decimal", Range: &adhoc.Range{Max: "1.5"}}},
		{Var: "m", Type: adhoc.FieldListMulti, Values: []string{"a", "b"}, Options: []adhoc.Option{{Value: "a"}, {Value: "b"}},
			Validate: &adhoc.Validate{Datatype: "xs:string", ListMin: "1", ListMax: "2"}},
		{Var: "b", Type: adhoc.FieldBoolean, Values: []string{"1"}, Validate: &adhoc.Validate{}},
	}}
	const want = `<x type='form' xmlns='jabber:x:data'><title>T</title><instructions>one</instructions><instructions>two</instructions>` +
		`<field label='S' type='text-single' var='s'><desc>a string</desc><required/><value>v</value></field>` +
		`<field type='list-single' var='e'><option label='A'><value>a</value></option><option><value>b</value></option></field>` +
		`<field type='text-single' var='n'><validate datatype='xs:integer' xmlns='http://jabber.org/protocol/xdata-validate'><range max='9' min='0'/></validate></field>` +
		`<field type='text-single' var='d'><validate datatype='xs:decimal' xmlns='http://jabber.org/protocol/xdata-validate'><range max='1.5'/></validate></field>` +
		`<field type='list-multi' var='m'><value>a</value><value>b</value><option><value>a</value></option><option><value>b</value></option>` +
		`<validate datatype='xs:string' xmlns='http://jabber.org/protocol/xdata-validate'><basic/><list-range max='2' min='1'/></validate></field>` +
		`<field type='boolean' var='b'><value>1</value><validate xmlns='http://jabber.org/protocol/xdata-validate'><basic/></validate></field></x>`
	got := marshal(t, f.TokenReader())
	if got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	formXSD(t, got)
	back, err := adhoc.ParseForm(parse(t, got))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, f) {
		t.Errorf("round trip\n got %+v\nwant %+v", back, f)
	}

	multi := adhoc.Form{Type: adhoc.FormResult, Title: "Agents",
		Reported: []adhoc.Field{{Var: "jid", Type: adhoc.FieldJIDSingle, Label: "JID"}, {Var: "name", Label: "Name"}},
		Items:    [][]adhoc.Field{{{Var: "jid", Values: []string{"a@x"}}, {Var: "name", Values: []string{"A"}}}}}
	got = marshal(t, multi.TokenReader())
	const wantMulti = `<x type='result' xmlns='jabber:x:data'><title>Agents</title><reported><field label='JID' type='jid-single' var='jid'/><field label='Name' var='name'/></reported>` +
		`<item><field var='jid'><value>a@x</value></field><field var='name'><value>A</value></field></item></x>`
	if got != wantMulti {
		t.Fatalf("multi:\n got %s\nwant %s", got, wantMulti)
	}
	formXSD(t, got)
	if back, err := adhoc.ParseForm(parse(t, got)); err != nil || !reflect.DeepEqual(back, multi) {
		t.Errorf("multi round trip: %+v %v", back, err)
	}
}

func TestParseRefuses(t *testing.T) {
	for _, s := range []string{
		`<command xmlns='http://jabber.org/protocol/commands'/>`,
		`<command xmlns='http://jabber.org/protocol/commands' node='n'><x xmlns='jabber:x:data'/></command>`,
		`<command xmlns='http://jabber.org/protocol/commands' node='n'><x xmlns='jabber:x:data' type='submit'/><x xmlns='jabber:x:data' type='submit'/></command>`,
		`<command xmlns='http://jabber.org/protocol/commands' node='n'><x xmlns='jabber:x:data' type='submit'><field var='a'/><field var='a'/></x></command>`,
		`<command xmlns='http://jabber.org/protocol/commands' node='n'><x xmlns='jabber:x:data' type='submit'><field var='a'><value><b/></value></field></x></command>`,
		`<command xmlns='http://jabber.org/protocol/commands' node='n'><x xmlns='jabber:x:data' type='submit'><bogus/></x></command>`,
		`<other xmlns='http://jabber.org/protocol/commands' node='n'/>`,
	} {
		if _, err := adhoc.ParseCommand(parse(t, s)); !errors.Is(err, adhoc.ErrMalformedCommand) {
			t.Errorf("%s: %v", s, err)
		}
	}
	if _, err := adhoc.ParseCommand(parse(t, `<command xmlns='http://jabber.org/protocol/commands' node='n' action='jump'/>`)); !errors.Is(err, adhoc.ErrMalformedAction) {
		t.Errorf("unknown action: %v", err)
	}
}
