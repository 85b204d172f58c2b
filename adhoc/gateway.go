package adhoc

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"

	"agentgw/db"
	"agentgw/surface"
	"agentgw/wire"

	"mellium.im/xmpp/jid"
)

// The gateway's own commands and their nodes.
const (
	NodeFind       = "find-agents"
	NodeList       = "admin-list"
	NodeStatus     = "admin-status"
	NodeActivate   = "admin-activate"
	NodeDeactivate = "admin-deactivate"
)

// gatewayCommands are the gateway's commands in list order; admin ones
// are listed, described and run only for [policy] admins.
var gatewayCommands = []struct {
	node, name string
	admin      bool
}{
	{NodeFind, "Find agents", false},
	{NodeList, "List endpoints (admin)", true},
	{NodeStatus, "Endpoint status (admin)", true},
	{NodeActivate, "Activate an endpoint version (admin)", true},
	{NodeDeactivate, "Deactivate an endpoint (admin)", true},
}

// Field vars of the gateway's forms.
const (
	varQuery   = "query"
	varJID     = "jid"
	varVersion = "version"
	// varLayout is Find agents' hidden field: a client that renders an
	// XEP-0004 table (reported and item) submits LayoutTable to get one.
	varLayout = "layout"
)

// The layouts of Find agents' results (docs/adhoc.md, "Find agents"). A
// client submits the form's hidden fields as they came, so a stock
// client gets LayoutFields: a jid-multi field of the page's endpoints and
// one fixed line per match, which every client we tried draws. The
// reported/item table is sent only to a client that asks for it, since
// Gajim 1.7 cannot show one in a command result (it stays on
// "Executing…").
const (
	LayoutFields = "fields"
	LayoutTable  = "table"
)

// DefaultPageSize is the page of "Find agents" and of the admins' list
// when GatewayService.PageSize is zero.
const DefaultPageSize = 20

// GatewayService answers the commands of the gateway JID: "Find agents",
// a search of the directory for clients without a search dialog, and for
// [policy] admins the provisioning operations list, status, activate and
// deactivate. Every answer about an endpoint is the requester's: search
// uses the directory's visibility, and the admin commands do not exist
// for anyone else (item-not-found, as for a nonexistent node).
type GatewayService struct {
	Store *db.Store
	// PageSize is the number of rows per result page (0:
	// DefaultPageSize).
	PageSize int
	// Sessions keeps the paging state between stages.
	Sessions *Sessions
	// Provisioned, if set, hears of every change an admin made: the
	// operation (a node), the admin and the endpoint.
	Provisioned func(op string, from jid.JID, endpoint string)
}

func isGatewayCommand(node string) bool {
	for _, c := range gatewayCommands {
		if c.node == node {
			return true
		}
	}
	return false
}

// IsGatewayNode reports whether a disco node at the gateway JID belongs to
// this package.
func IsGatewayNode(node string) bool { return node == NS || isGatewayCommand(node) }

// allowed reports whether r.From may see and run node.
func allowed(r Request, node string) bool {
	for _, c := range gatewayCommands {
		if c.node == node {
			return !c.admin || r.Policy.IsAdmin(r.From)
		}
	}
	return false
}

// Items answers disco#items on node NS of the gateway.
func (s *GatewayService) Items(r Request) wire.ItemsResult {
	out := wire.ItemsResult{Node: NS}
	for _, c := range gatewayCommands {
		if allowed(r, c.node) {
			out.Items = append(out.Items, wire.Item{JID: r.To.Bare().String(), Node: c.node, Name: c.name})
		}
	}
	return out
}

// Info answers disco#info on the gateway's node NS or a command node.
func (s *GatewayService) Info(r Request, node string) (wire.InfoResult, error) {
	if node == NS {
		return wire.InfoResult{Node: NS, Identities: []wire.Identity{{Category: CategoryAutomation, Type: TypeCommandList}},
			Features: []string{"http://jabber.org/protocol/disco#info", "http://jabber.org/protocol/disco#items"}}, nil
	}
	for _, c := range gatewayCommands {
		if c.node == node && allowed(r, node) {
			return CommandInfo(node, c.name), nil
		}
	}
	return wire.InfoResult{}, surface.ErrItemNotFound
}

func (s *GatewayService) pageSize() int {
	if s.PageSize > 0 {
		return s.PageSize
	}
	return DefaultPageSize
}

// Execute answers a <command/> addressed to the gateway.
func (s *GatewayService) Execute(ctx context.Context, r Request) (Command, error) {
	cmd, err := ParseCommand(r.Payload)
	if err != nil {
		return Command{}, surface.ErrBadRequest
	}
	if !allowed(r, cmd.Node) {
		return Command{}, surface.ErrItemNotFound
	}
	owner := r.From.Bare().String()
	var sess *gwSession
	id := cmd.SessionID
	if id == "" {
		if id, sess, err = s.Sessions.start(owner, cmd.Node); err != nil {
			return Command{}, err
		}
	} else if sess = s.Sessions.get(id, owner, cmd.Node); sess == nil {
		return Command{}, surface.ErrBadRequest
	}
	reply := func(status string, acts *Actions, form *Form, notes ...Note) Command {
		if status != StatusExecuting {
			s.Sessions.end(id)
		}
		return Command{Node: cmd.Node, SessionID: id, Status: status, Actions: acts, Form: form, Notes: notes}
	}
	if cmd.Action == ActionCancel || (cmd.Form != nil && cmd.Form.Type == FormCancel) {
		return reply(StatusCanceled, nil, nil), nil
	}
	x := gwExchange{s: s, r: r, cmd: cmd, sess: sess, reply: reply, fresh: cmd.SessionID == ""}
	switch cmd.Node {
	case NodeFind:
		return x.find(ctx)
	case NodeList:
		return x.list(ctx)
	case NodeStatus:
		return x.status(ctx)
	case NodeActivate:
		return x.activate(ctx)
	case NodeDeactivate:
		return x.deactivate(ctx)
	}
	return Command{}, surface.ErrItemNotFound
}

type gwExchange struct {
	s     *GatewayService
	r     Request
	cmd   Command
	sess  *gwSession
	fresh bool
	reply func(status string, acts *Actions, form *Form, notes ...Note) Command
}

// submitted returns the submitted form, if the request carries one.
func (x *gwExchange) submitted() (Form, bool) {
	if x.cmd.Form != nil && x.cmd.Form.Type == FormSubmit {
		return *x.cmd.Form, true
	}
	return Form{}, false
}

func value(f Form, v string) string {
	fl, _ := f.Field(v)
	return strings.TrimSpace(strings.Join(fl.Values, ""))
}

func (x *gwExchange) find(ctx context.Context) (Command, error) {
	form := &Form{Type: FormForm, Title: "Find agents",
		Instructions: []string{"Enter a name or a word of it; leave it empty to list every agent you may see."},
		Fields: []Field{{Var: varQuery, Type: FieldTextSingle, Label: "Name or keyword"},
			{Var: varLayout, Type: FieldHidden, Values: []string{LayoutFields}}}}
	if f, ok := x.submitted(); ok {
		x.sess.query, x.sess.index, x.sess.searched = value(f, varQuery), 0, true
		x.sess.table = value(f, varLayout) == LayoutTable
		return x.page(ctx, "Agents")
	}
	if !x.sess.searched {
		return x.askAgain(form), nil
	}
	return x.turn(ctx, "Agents")
}

func (x *gwExchange) list(ctx context.Context) (Command, error) {
	if x.fresh {
		return x.page(ctx, "Endpoints")
	}
	return x.turn(ctx, "Endpoints")
}

// turn moves a paged result by the requested action.
func (x *gwExchange) turn(ctx context.Context, title string) (Command, error) {
	switch x.cmd.Action {
	case ActionNext, ActionExecute, "":
		x.sess.index += x.s.pageSize()
	case ActionPrev:
		x.sess.index = max(0, x.sess.index-x.s.pageSize())
	case ActionComplete:
		return x.reply(StatusCompleted, nil, nil), nil
	}
	return x.page(ctx, title)
}

// page shows the session's page: of the search for Find agents, of every
// endpoint for the admins' list.
func (x *gwExchange) page(ctx context.Context, title string) (Command, error) {
	size := x.s.pageSize()
	idx := x.sess.index
	f := &Form{Type: FormResult, Title: title}
	var count, shown int
	if x.cmd.Node == NodeFind {
		scope := x.r.Policy.VisibleScope(x.r.From)
		res, err := x.s.Store.Search(ctx, db.Scope{All: scope.All, JIDs: scope.JIDs}, x.sess.query, db.Page{Max: size, Index: &idx})
		if err != nil {
			return Command{}, err
		}
		count = res.Count
		if x.sess.table {
			f.Reported = []Field{{Var: "jid", Type: FieldJIDSingle, Label: "Jabber ID"}, {Var: "name", Type: FieldTextSingle, Label: "Name"}}
			for _, it := range res.Items {
				f.Items = append(f.Items, []Field{{Var: "jid", Values: []string{it.JID}}, {Var: "name", Values: []string{it.Name}}})
			}
		} else {
			f.Fields = foundFields(res.Items)
		}
		shown = len(res.Items)
	} else {
		all, err := x.s.Store.Endpoints(ctx)
		if err != nil {
			return Command{}, err
		}
		count = len(all)
		f.Reported = []Field{{Var: "jid", Type: FieldJIDSingle, Label: "Jabber ID"}, {Var: "active", Label: "Active version"},
			{Var: "origin", Label: "Origin"}, {Var: "versions", Label: "Versions"}}
		for i := idx; i < len(all) && i < idx+size; i++ {
			e := all[i]
			active := e.Active
			if active == "" {
				active = "(inactive)"
			}
			f.Items = append(f.Items, []Field{{Var: "jid", Values: []string{e.JID}}, {Var: "active", Values: []string{active}},
				{Var: "origin", Values: []string{e.Origin}}, {Var: "versions", Values: []string{fmt.Sprint(len(e.Versions))}}})
		}
		shown = len(f.Items)
	}
	if shown == 0 {
		// Nothing to show: the note alone, with no empty form for a
		// client to trip on.
		f = nil
	}
	var note Note
	switch {
	case count == 0:
		note = Note{Type: NoteInfo, Text: "Nothing found."}
	case shown == 0:
		note = Note{Type: NoteInfo, Text: fmt.Sprintf("No more results (%d in all).", count)}
	default:
		note = Note{Type: NoteInfo, Text: fmt.Sprintf("Results %d to %d of %d.", idx+1, idx+shown, count)}
	}
	more := idx+shown < count
	if !more && idx == 0 {
		return x.reply(StatusCompleted, nil, f, note), nil
	}
	acts := &Actions{Execute: ActionComplete, Prev: idx > 0, Next: more, Complete: true}
	if more {
		acts.Execute = ActionNext
	}
	return x.reply(StatusExecuting, acts, f, note), nil
}

// foundFields is a page of Find agents as plain fields: a jid-multi of
// the endpoints, for clients that offer to open or add a JID, then one
// fixed line per match with its name.
func foundFields(items []db.Item) []Field {
	jids := Field{Var: varJID, Type: FieldJIDMulti, Label: "Agents"}
	lines := make([]Field, 0, len(items))
	for _, it := range items {
		jids.Values = append(jids.Values, it.JID)
		line := it.JID
		if it.Name != "" && it.Name != it.JID {
			line = it.Name + " (" + it.JID + ")"
		}
		lines = append(lines, Field{Type: FieldFixed, Values: []string{line}})
	}
	return append([]Field{jids}, lines...)
}

// endpointForm asks for an endpoint's JID, and a version when withVersion.
func endpointForm(title string, withVersion bool) *Form {
	f := &Form{Type: FormForm, Title: title, Fields: []Field{{Var: varJID, Type: FieldJIDSingle, Label: "Endpoint", Required: true}}}
	if withVersion {
		f.Fields = append(f.Fields, Field{Var: varVersion, Type: FieldTextSingle, Label: "Version", Required: true})
	}
	return f
}

// endpointJID reads the endpoint of a submitted form as a bare JID.
func endpointJID(f Form) (string, *FieldError) {
	j, err := jid.Parse(value(f, varJID))
	if err != nil || j.Localpart() == "" || j.Resourcepart() != "" {
		return "", &FieldError{Var: varJID, Label: "Endpoint", Reason: "is not a bare JID"}
	}
	return j.Bare().String(), nil
}

// askAgain shows form (again), with notes, and waits for its submission.
func (x *gwExchange) askAgain(form *Form, notes ...Note) Command {
	return x.reply(StatusExecuting, submitActions, form, notes...)
}

// submittedEndpoint is the first step of the endpoint commands: the
// submitted form and its endpoint, or (ok false) the reply that asks for
// them, again with a note when the endpoint is not a bare JID.
func (x *gwExchange) submittedEndpoint(form *Form) (f Form, ep string, ask Command, ok bool) {
	if f, ok = x.submitted(); !ok {
		return f, "", x.askAgain(form), false
	}
	ep, fe := endpointJID(f)
	if fe != nil {
		return f, "", x.askAgain(form, fe.Note()), false
	}
	return f, ep, Command{}, true
}

func (x *gwExchange) status(ctx context.Context) (Command, error) {
	form := endpointForm("Endpoint status", false)
	_, ep, ask, ok := x.submittedEndpoint(form)
	if !ok {
		return ask, nil
	}
	st, err := x.s.Store.Status(ctx, ep)
	if errors.Is(err, db.ErrNotFound) {
		return x.askAgain(form, Note{Type: NoteError, Text: "No endpoint has that JID."}), nil
	}
	if err != nil {
		return Command{}, err
	}
	active := st.Active
	if active == "" {
		active = "(inactive)"
	}
	var versions []string
	for _, v := range st.Versions {
		versions = append(versions, v.Version+" sha-256:"+base64.StdEncoding.EncodeToString(v.Hash[:]))
	}
	res := &Form{Type: FormResult, Title: "Endpoint status", Fields: []Field{
		{Var: "jid", Type: FieldJIDSingle, Label: "Endpoint", Values: []string{st.JID}},
		{Var: "origin", Type: FieldTextSingle, Label: "Origin", Values: []string{st.Origin}},
		{Var: "active", Type: FieldTextSingle, Label: "Active version", Values: []string{active}},
	}}
	b := budget{left: MaxResultBytes}
	res.Fields = append(res.Fields, b.field(Field{Var: "versions", Type: FieldTextMulti, Label: "Versions"}, versions))
	return x.reply(StatusCompleted, nil, res), nil
}

func (x *gwExchange) activate(ctx context.Context) (Command, error) {
	form := endpointForm("Activate an endpoint version", true)
	f, ep, ask, ok := x.submittedEndpoint(form)
	if !ok {
		return ask, nil
	}
	version := value(f, varVersion)
	if version == "" {
		return x.askAgain(form, (&FieldError{Var: varVersion, Label: "Version", Reason: "is required"}).Note()), nil
	}
	err := x.s.Store.Activate(ctx, ep, version, nil)
	if errors.Is(err, db.ErrNotFound) {
		return x.askAgain(form, Note{Type: NoteError, Text: "No endpoint has that JID and version."}), nil
	}
	if err != nil {
		return Command{}, err
	}
	if x.s.Provisioned != nil {
		x.s.Provisioned(NodeActivate, x.r.From, ep)
	}
	return x.reply(StatusCompleted, nil, nil, Note{Type: NoteInfo, Text: fmt.Sprintf("%s now serves version %s.", ep, version)}), nil
}

func (x *gwExchange) deactivate(ctx context.Context) (Command, error) {
	form := endpointForm("Deactivate an endpoint", false)
	_, ep, ask, ok := x.submittedEndpoint(form)
	if !ok {
		return ask, nil
	}
	err := x.s.Store.Deactivate(ctx, ep)
	if errors.Is(err, db.ErrNotFound) {
		return x.askAgain(form, Note{Type: NoteError, Text: "No endpoint has that JID."}), nil
	}
	if err != nil {
		return Command{}, err
	}
	if x.s.Provisioned != nil {
		x.s.Provisioned(NodeDeactivate, x.r.From, ep)
	}
	return x.reply(StatusCompleted, nil, nil, Note{Type: NoteInfo, Text: ep + " is deactivated; its versions are kept."}), nil
}
