package gateway_test

import (
	"fmt"
	"strings"
	"testing"

	"agentgw/adhoc"
	"agentgw/policy"
	"agentgw/wire"
)

// gwCommand sends a <command/> to the gateway JID.
func gwCommand(t *testing.T, e *env, from, node, action, sessionID, form string) (wire.Element, adhoc.Command) {
	t.Helper()
	attrs := fmt.Sprintf(`node='%s'`, node)
	if action != "" {
		attrs += fmt.Sprintf(` action='%s'`, action)
	}
	if sessionID != "" {
		attrs += fmt.Sprintf(` sessionid='%s'`, sessionID)
	}
	iq := e.srv.iq(from, domain, "set", fmt.Sprintf(`<command xmlns='http://jabber.org/protocol/commands' %s>%s</command>`, attrs, form))
	if typ, _ := iq.AttrValue("type"); typ != "result" {
		return iq, adhoc.Command{}
	}
	p := iq.Children()[0]
	commandXSD(t, marshal(t, p))
	c, err := adhoc.ParseCommand(p)
	if err != nil {
		t.Fatal(err)
	}
	return iq, c
}

// itemJIDs are the endpoints a result page lists: the rows of a table,
// or the values of Find agents' jid-multi field.
func itemJIDs(c adhoc.Command) []string {
	var out []string
	if c.Form == nil {
		return nil
	}
	for _, it := range c.Form.Items {
		out = append(out, it[0].Values[0])
	}
	if f, ok := c.Form.Field("jid"); ok && f.Type == adhoc.FieldJIDMulti {
		out = append(out, f.Values...)
	}
	return out
}

// findShape checks a Find agents page as stock clients get it: no table,
// a jid-multi field of the page's endpoints, then one fixed line per
// match naming it.
func findShape(t *testing.T, c adhoc.Command) {
	t.Helper()
	f := c.Form
	if f == nil || len(f.Reported) != 0 || len(f.Items) != 0 || len(f.Fields) == 0 {
		t.Fatalf("find page: %+v", f)
	}
	jids := f.Fields[0]
	if jids.Var != "jid" || jids.Type != adhoc.FieldJIDMulti || len(f.Fields) != 1+len(jids.Values) {
		t.Fatalf("find page fields: %+v", f.Fields)
	}
	for i, j := range jids.Values {
		if line := f.Fields[1+i]; line.Type != adhoc.FieldFixed || line.Var != "" || len(line.Values) != 1 || !strings.HasSuffix(line.Values[0], "("+j+")") {
			t.Errorf("line %d for %s: %+v", i, j, line)
		}
	}
}

// TestGatewayFindAgents: "Find agents" takes a word and pages through
// the visible matches with next and prev.
func TestGatewayFindAgents(t *testing.T) {
	e := start(t, "")
	for i := 1; i <= 25; i++ {
		register(t, e.store, fmt.Sprintf("a%03d", i), fmt.Sprintf("Agent %d", i), i != 2)
	}
	register(t, e.store, "meteo", "Météo", true)
	golden(t, "adhoc-gateway-commands", marshal(t, e.srv.iq(alice, domain, "get", `<query xmlns='http://jabber.org/protocol/disco#items' node='http://jabber.org/protocol/commands'/>`)))
	info := marshal(t, e.srv.iq(alice, domain, "get", `<query xmlns='http://jabber.org/protocol/disco#info'/>`))
	if !strings.Contains(info, "var='"+adhoc.NS+"'") {
		t.Errorf("the gateway does not advertise commands: %s", info)
	}

	iq, c := gwCommand(t, e, alice, adhoc.NodeFind, "execute", "", "")
	if c.Form == nil || c.Form.Type != adhoc.FormForm || c.Status != adhoc.StatusExecuting {
		t.Fatalf("form: %s", marshal(t, iq))
	}
	iq, p1 := gwCommand(t, e, alice, adhoc.NodeFind, "complete", c.SessionID, submit("query", "agent"))
	golden(t, "adhoc-find-page", normalizeCommand(strings.ReplaceAll(marshal(t, iq), c.SessionID, "gw00000000000000000000000000000000")))
	if got := itemJIDs(p1); len(got) != 10 || got[0] != "a001@"+domain || !p1.Actions.Next || p1.Actions.Prev {
		t.Fatalf("page 1: %v %+v", got, p1.Actions)
	}
	findShape(t, p1)
	if line := p1.Form.Fields[1].Values[0]; line != "Agent 1 (a001@"+domain+")" {
		t.Errorf("first line %q", line)
	}
	_, p2 := gwCommand(t, e, alice, adhoc.NodeFind, "next", c.SessionID, "")
	findShape(t, p2)
	_, p3 := gwCommand(t, e, alice, adhoc.NodeFind, "next", c.SessionID, "")
	if got := itemJIDs(p3); len(got) != 4 || p3.Actions.Next || !p3.Actions.Prev || !strings.Contains(noteText(p3), "21 to 24 of 24") {
		t.Fatalf("page 3: %v %s", got, noteText(p3))
	}
	_, back := gwCommand(t, e, alice, adhoc.NodeFind, "prev", c.SessionID, "")
	if fmt.Sprint(itemJIDs(back)) != fmt.Sprint(itemJIDs(p2)) {
		t.Errorf("prev: %v, want %v", itemJIDs(back), itemJIDs(p2))
	}
	_, done := gwCommand(t, e, alice, adhoc.NodeFind, "complete", c.SessionID, "")
	if done.Status != adhoc.StatusCompleted {
		t.Errorf("complete: %+v", done)
	}
	// The session is over; another account never had it.
	if el, _ := gwCommand(t, e, alice, adhoc.NodeFind, "next", c.SessionID, ""); !strings.Contains(marshal(t, el), "bad-request") {
		t.Errorf("ended session: %s", marshal(t, el))
	}

	// Folded search; one page completes at once. carol sees a001, a003.
	_, c = gwCommand(t, e, alice, adhoc.NodeFind, "execute", "", "")
	if _, r := gwCommand(t, e, alice, adhoc.NodeFind, "complete", c.SessionID, submit("query", "METEO")); r.Status != adhoc.StatusCompleted || fmt.Sprint(itemJIDs(r)) != "[meteo@"+domain+"]" {
		t.Errorf("météo: %+v", r)
	}
	// The form carries the hidden layout field; a client that renders
	// tables submits layout=table and gets the reported/item table.
	iq, c = gwCommand(t, e, alice, adhoc.NodeFind, "execute", "", "")
	if f, ok := c.Form.Field("layout"); !ok || f.Type != adhoc.FieldHidden || fmt.Sprint(f.Values) != "["+adhoc.LayoutFields+"]" {
		t.Fatalf("no hidden layout field: %s", marshal(t, iq))
	}
	iq, tbl := gwCommand(t, e, alice, adhoc.NodeFind, "complete", c.SessionID, submit("query", "agent", "layout", adhoc.LayoutTable))
	golden(t, "adhoc-find-table", normalizeCommand(strings.ReplaceAll(marshal(t, iq), c.SessionID, "gw00000000000000000000000000000000")))
	if len(tbl.Form.Reported) != 2 || len(tbl.Form.Fields) != 0 || fmt.Sprint(itemJIDs(tbl)) != fmt.Sprint(itemJIDs(p1)) {
		t.Errorf("table: %+v", tbl.Form)
	}
	if _, next := gwCommand(t, e, alice, adhoc.NodeFind, "next", c.SessionID, ""); len(next.Form.Reported) != 2 || fmt.Sprint(itemJIDs(next)) != fmt.Sprint(itemJIDs(p2)) {
		t.Errorf("table, next page: %+v", next.Form)
	}
	// Nothing found: the note alone, no form to draw.
	_, c = gwCommand(t, e, alice, adhoc.NodeFind, "execute", "", "")
	if _, r := gwCommand(t, e, alice, adhoc.NodeFind, "complete", c.SessionID, submit("query", "no such agent")); r.Status != adhoc.StatusCompleted || r.Form != nil || noteText(r) != "info: Nothing found." {
		t.Errorf("nothing found: %+v", r)
	}

	_, c = gwCommand(t, e, carol, adhoc.NodeFind, "execute", "", "")
	if _, r := gwCommand(t, e, carol, adhoc.NodeFind, "complete", c.SessionID, submit("query", "")); fmt.Sprint(itemJIDs(r)) != "[a001@"+domain+" a003@"+domain+"]" {
		t.Errorf("carol: %v", itemJIDs(r))
	}
	if el, _ := gwCommand(t, e, mall, adhoc.NodeFind, "next", c.SessionID, ""); !strings.Contains(marshal(t, el), "bad-request") {
		t.Errorf("someone else's session: %s", marshal(t, el))
	}
}

// TestGatewayAdminCommands: admins list, inspect, deactivate and activate
// endpoints; for anyone else the admin commands do not exist.
func TestGatewayAdminCommands(t *testing.T) {
	e := start(t, "")
	e.gw.SetPolicy(apiPolicy(e, func(*policy.Policy) {}))
	register(t, e.store, "a001", "Agent One", true)
	register(t, e.store, "a002", "Agent Two", false)
	norm := func(el wire.Element) string {
		el.Start.Attr = nil
		return marshal(t, el)
	}
	missing, _ := gwCommand(t, e, alice, "no-such-command", "execute", "", "")
	for _, node := range []string{adhoc.NodeList, adhoc.NodeStatus, adhoc.NodeActivate, adhoc.NodeDeactivate} {
		if el, _ := gwCommand(t, e, alice, node, "execute", "", ""); norm(el) != norm(missing) {
			t.Errorf("%s for a non-admin: %s", node, marshal(t, el))
		}
		if el := e.srv.iq(alice, domain, "get", `<query xmlns='http://jabber.org/protocol/disco#info' node='`+node+`'/>`); !strings.Contains(marshal(t, el), "item-not-found") {
			t.Errorf("%s info for a non-admin: %s", node, marshal(t, el))
		}
	}
	items := marshal(t, e.srv.iq(admin, domain, "get", `<query xmlns='http://jabber.org/protocol/disco#items' node='http://jabber.org/protocol/commands'/>`))
	for _, node := range []string{adhoc.NodeFind, adhoc.NodeList, adhoc.NodeStatus, adhoc.NodeActivate, adhoc.NodeDeactivate} {
		if !strings.Contains(items, "node='"+node+"'") {
			t.Errorf("admin's list lacks %s: %s", node, items)
		}
	}

	_, list := gwCommand(t, e, admin, adhoc.NodeList, "execute", "", "")
	if list.Status != adhoc.StatusCompleted || fmt.Sprint(itemJIDs(list)) != "[a001@"+domain+" a002@"+domain+"]" {
		t.Fatalf("list: %+v", list)
	}
	_, c := gwCommand(t, e, admin, adhoc.NodeStatus, "execute", "", "")
	_, st := gwCommand(t, e, admin, adhoc.NodeStatus, "complete", c.SessionID, submit("jid", "a002@"+domain))
	if f, _ := st.Form.Field("active"); st.Status != adhoc.StatusCompleted || f.Values[0] != "(inactive)" {
		t.Fatalf("status: %+v", st)
	}
	_, c = gwCommand(t, e, admin, adhoc.NodeActivate, "execute", "", "")
	_, bad := gwCommand(t, e, admin, adhoc.NodeActivate, "complete", c.SessionID, submit("jid", "a002@"+domain, "version", "9.9"))
	if bad.Status != adhoc.StatusExecuting || !strings.Contains(noteText(bad), "error: No endpoint has that JID and version.") {
		t.Fatalf("bad version: %+v", bad)
	}
	_, ok := gwCommand(t, e, admin, adhoc.NodeActivate, "complete", c.SessionID, submit("jid", "a002@"+domain, "version", "1.0"))
	if ok.Status != adhoc.StatusCompleted {
		t.Fatalf("activate: %s", noteText(ok))
	}
	if v, err := e.store.ActiveSummary(t.Context(), "a002@"+domain); err != nil || v.Version != "1.0" {
		t.Errorf("after activate: %v %v", v, err)
	}
	_, c = gwCommand(t, e, admin, adhoc.NodeDeactivate, "execute", "", "")
	if _, d := gwCommand(t, e, admin, adhoc.NodeDeactivate, "complete", c.SessionID, submit("jid", "a001@"+domain)); d.Status != adhoc.StatusCompleted {
		t.Fatalf("deactivate: %s", noteText(d))
	}
	if _, err := e.store.ActiveSummary(t.Context(), "a001@"+domain); err == nil {
		t.Error("a001 is still active")
	}
}
