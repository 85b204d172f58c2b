package account

import (
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"agentgw/scope"
	"agentgw/wire"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"mellium.im/xmpp/jid"
)

// Limits of the tools' arguments (docs/limits.md).
const (
	// MaxMessageBytes bounds SendChatMessage's Message (UTF-8 bytes), below
	// the servers' stanza limits (Prosody: 256 KiB).
	MaxMessageBytes = 100000
	// MaxWaitSeconds bounds WaitForMessage's TimeoutSeconds;
	// DefaultWaitSeconds is its default.
	MaxWaitSeconds     = 300
	DefaultWaitSeconds = 60
	// maxNameBytes bounds NickName and each group; maxGroups the groups.
	maxNameBytes = 1023
	maxGroups    = 100
)

// argKind is the JSON type of a tool argument.
type argKind int

const (
	kindString argKind = iota
	kindBool
	kindStrings
	kindInt
)

// arg is one argument of a tool, as the seed defines it.
type arg struct {
	name     string
	kind     argKind
	required bool
	// def is the default, shown in the schema (nil: null).
	def  any
	desc string
}

// tool is one tool of the interface: its seed definition and handler.
type tool struct {
	name, title, desc string
	scope             string
	// The seed's Properties.
	destroys, idempotent bool
	readOnly             bool
	args                 []arg
	// message is true for tools returning a MessageResponse.
	message bool
	run     func(s *Face, ctx context.Context, a Args) any
}

// tools is the interface: the seed's ten tools, then ours.
var tools = []tool{
	{
		name: "AcceptPresenceSubscription", title: "Accept presence subscription", scope: scope.PresenceAccept,
		desc: "Accept a pending request from another user to subscribe to this account's presence.",
		args: []arg{{name: "From", kind: kindString, required: true, desc: "Bare JID of the user whose presence subscription request is accepted."}},
		run:  (*Face).acceptSubscription,
	},
	{
		name: "AddToRoster", title: "Add to roster", scope: scope.RosterAdd,
		desc: "Add a contact to this account's roster.",
		args: []arg{
			{name: "BareJid", kind: kindString, required: true, desc: "Bare JID of the contact to add."},
			{name: "NickName", kind: kindString, desc: "Nick name of the contact, if any."},
			{name: "Groups", kind: kindStrings, desc: "Roster groups of the contact, if any."},
		},
		run: (*Face).addToRoster,
	},
	{
		name: "DeclinePresenceSubscription", title: "Decline presence subscription", scope: scope.PresenceDecline,
		desc: "Decline a pending request from another user to subscribe to this account's presence.",
		args: []arg{{name: "From", kind: kindString, required: true, desc: "Bare JID of the user whose presence subscription request is declined."}},
		run:  (*Face).declineSubscription,
	},
	{
		name: "GetMessage", title: "Get message", scope: scope.MessageGet, destroys: true, message: true,
		desc: "Get a received message by its identifier, and optionally remove it from the received messages.",
		args: []arg{
			{name: "MessageId", kind: kindString, required: true, desc: "The message identifier, or its mid: resource URI."},
			{name: "Remove", kind: kindBool, def: false, desc: "Remove the message from the received messages."},
		},
		run: (*Face).getMessage,
	},
	{
		name: "PopMessage", title: "Pop message", scope: scope.MessageGet, destroys: true, message: true,
		desc: "Get the oldest received message and remove it from the received messages.",
		run:  (*Face).popMessage,
	},
	{
		name: "RemoveFromRoster", title: "Remove from roster", scope: scope.RosterRemove, destroys: true,
		desc: "Remove a contact from this account's roster (which also ends presence subscriptions both ways).",
		args: []arg{{name: "BareJid", kind: kindString, required: true, desc: "Bare JID of the contact to remove."}},
		run:  (*Face).removeFromRoster,
	},
	{
		name: "RequestPresenceSubscription", title: "Request presence subscription", scope: scope.PresenceSubscribe, idempotent: true,
		desc: "Ask another user for a subscription to their presence.",
		args: []arg{{name: "To", kind: kindString, required: true, desc: "Bare JID of the user asked."}},
		run:  (*Face).requestSubscription,
	},
	{
		name: "RequestPresenceUnsubscription", title: "Request presence unsubscription", scope: scope.PresenceUnsubscribe, destroys: true, idempotent: true,
		desc: "End this account's subscription to another user's presence.",
		args: []arg{{name: "To", kind: kindString, required: true, desc: "Bare JID of the user whose presence this account no longer follows."}},
		run:  (*Face).requestUnsubscription,
	},
	{
		name: "SendChatMessage", title: "Send chat message", scope: scope.MessageSend,
		desc: "Send a chat message over XMPP. With IsMarkdown the body is Markdown text, sent with XEP-0393 styling; otherwise plain text, marked unstyled.",
		args: []arg{
			{name: "To", kind: kindString, required: true, desc: "JID of the recipient (normally a bare JID)."},
			{name: "Message", kind: kindString, required: true, desc: "The message text: plain text, or Markdown."},
			{name: "IsMarkdown", kind: kindBool, def: false, desc: "The message is Markdown (true) or plain text (false)."},
			{name: "Language", kind: kindString, desc: "Language of the message (ISO 639 code or BCP 47 tag), if known."},
		},
		run: (*Face).sendChatMessage,
	},
	{
		name: "UpdateRosterItem", title: "Update roster item", scope: scope.RosterUpdate, destroys: true, idempotent: true,
		desc: "Update the nick name or groups of a contact in this account's roster. An omitted or null argument keeps its current value.",
		args: []arg{
			{name: "BareJid", kind: kindString, required: true, desc: "Bare JID of the contact to update."},
			{name: "NickName", kind: kindString, desc: "New nick name; an empty string removes it."},
			{name: "Groups", kind: kindStrings, desc: "New roster groups; an empty list removes them all."},
		},
		run: (*Face).updateRosterItem,
	},
	{
		name: "WaitForMessage", title: "Wait for message", scope: scope.MessageGet, readOnly: true, idempotent: true, message: true,
		desc: "Wait until a message is received, then return the oldest received message without removing it. Fails at the timeout if none arrives.",
		args: []arg{{name: "TimeoutSeconds", kind: kindInt, def: DefaultWaitSeconds, desc: fmt.Sprintf("How long to wait, in seconds (1 to %d).", MaxWaitSeconds)}},
		run:  (*Face).waitForMessage,
	},
}

// ToolScope returns the scope a seed tool needs, or "" for an unknown tool.
func ToolScope(name string) string {
	for _, t := range tools {
		if t.name == name {
			return t.scope
		}
	}
	return ""
}

// schemas of the results.
var (
	genericSchema = map[string]any{
		"type": "object",
		"properties": map[string]any{
			"Success": map[string]any{"type": "boolean", "description": "Whether the operation succeeded."},
			"Message": map[string]any{"type": "string", "description": "What happened, or why it failed."},
		},
		"required": []string{"Success", "Message"},
	}
	messageSchema = map[string]any{
		"type": "object",
		"properties": map[string]any{
			"Success":          map[string]any{"type": "boolean", "description": "Whether a message was found."},
			"Message":          map[string]any{"type": "string", "description": "What happened, or why no message is returned."},
			"MessageId":        map[string]any{"type": "string", "description": "Our identifier of the message; its resource is mid:MessageId."},
			"From":             map[string]any{"type": "string", "description": "Full JID of the sender."},
			"FromBareJid":      map[string]any{"type": "string", "description": "Bare JID of the sender."},
			"To":               map[string]any{"type": "string", "description": "Full JID of the recipient."},
			"Body":             map[string]any{"type": "string", "description": "Plain text body."},
			"Subject":          map[string]any{"type": "string"},
			"ThreadID":         map[string]any{"type": "string"},
			"ParentThreadID":   map[string]any{"type": "string"},
			"ContentXml":       map[string]any{"type": "string", "description": "Other XML payloads of the message."},
			"Type":             map[string]any{"type": []string{"string", "null"}, "enum": append(anySlice(messageTypeValues), nil)},
			"ErrorMessage":     map[string]any{"type": []string{"boolean", "null"}},
			"ErrorMessageCode": map[string]any{"type": []string{"integer", "null"}},
			"ErrorMessageType": map[string]any{"type": []string{"string", "null"}, "enum": append(anySlice(errorTypeValues), nil)},
			"ErrorMessageText": map[string]any{"type": "string"},
		},
		"required": []string{"Success", "Message"},
	}
)

func anySlice(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

// mcpTool builds the MCP definition of t.
func (t tool) mcpTool() *mcp.Tool {
	props := map[string]any{}
	var required []string
	for _, a := range t.args {
		p := map[string]any{"description": a.desc}
		switch a.kind {
		case kindString:
			p["type"] = "string"
			if !a.required {
				p["type"] = []string{"string", "null"}
			}
		case kindBool:
			p["type"] = "boolean"
		case kindInt:
			p["type"] = "integer"
			p["minimum"], p["maximum"] = 1, MaxWaitSeconds
		case kindStrings:
			p["type"] = []string{"array", "null"}
			p["items"] = map[string]any{"type": "string"}
		}
		if a.required {
			required = append(required, a.name)
		} else {
			p["default"] = a.def
		}
		props[a.name] = p
	}
	in := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
	if required != nil {
		in["required"] = required
	}
	out := genericSchema
	if t.message {
		out = messageSchema
	}
	destroys, open := t.destroys, true
	return &mcp.Tool{
		Name:         t.name,
		Title:        t.title,
		Description:  t.desc,
		InputSchema:  in,
		OutputSchema: out,
		Annotations: &mcp.ToolAnnotations{
			Title:           t.title,
			ReadOnlyHint:    t.readOnly,
			DestructiveHint: &destroys,
			IdempotentHint:  t.idempotent,
			OpenWorldHint:   &open,
		},
	}
}

// Args are a call's decoded arguments, by name: a string, a bool, an int
// or a []string, as the argument's kind; an absent optional argument with
// no default is absent.
type Args map[string]any

// Str is a string argument, "" when absent.
func (a Args) Str(name string) string { s, _ := a[name].(string); return s }

// Strp returns nil for an absent or null argument.
func (a Args) Strp(name string) *string {
	s, ok := a[name].(string)
	if !ok {
		return nil
	}
	return &s
}

// Bool is a boolean argument, false when absent.
func (a Args) Bool(name string) bool { b, _ := a[name].(bool); return b }

// Int is an integer argument, 0 when absent.
func (a Args) Int(name string) int { n, _ := a[name].(int); return n }

// Strings is an array argument; ok is false when it is absent or null.
func (a Args) Strings(name string) ([]string, bool) {
	s, ok := a[name].([]string)
	return s, ok
}

// decode checks raw against t's arguments: unknown arguments, missing
// required ones and wrong types are errors that name the argument.
func (t tool) decode(raw json.RawMessage) (Args, error) {
	in := map[string]json.RawMessage{}
	if len(raw) > 0 && string(raw) != "null" {
		if err := json.Unmarshal(raw, &in); err != nil {
			return nil, errors.New("the arguments must be a JSON object")
		}
	}
	out := Args{}
	for name := range in {
		if !slices.ContainsFunc(t.args, func(a arg) bool { return a.name == name }) {
			return nil, fmt.Errorf("unknown argument %q", name)
		}
	}
	for _, a := range t.args {
		v, ok := in[a.name]
		if !ok || string(v) == "null" {
			if a.required {
				return nil, fmt.Errorf("%s is required", a.name)
			}
			if a.def != nil {
				out[a.name] = a.def
			}
			continue
		}
		var err error
		switch a.kind {
		case kindString:
			var s string
			if err = json.Unmarshal(v, &s); err == nil {
				out[a.name] = s
			}
		case kindBool:
			var b bool
			if err = json.Unmarshal(v, &b); err == nil {
				out[a.name] = b
			}
		case kindInt:
			var n json.Number
			if err = json.Unmarshal(v, &n); err == nil {
				var i int64
				if i, err = n.Int64(); err == nil {
					out[a.name] = int(max(min(i, 1<<31), -1<<31))
				}
			}
		case kindStrings:
			var s []string
			if err = json.Unmarshal(v, &s); err == nil {
				if s == nil {
					s = []string{}
				}
				out[a.name] = s
			}
		}
		if err != nil {
			return nil, fmt.Errorf("%s must be %s", a.name, [...]string{"a string", "a boolean", "an array of strings", "an integer"}[a.kind])
		}
	}
	return out, nil
}

// handler is the MCP handler of t.
func (s *Face) handler(t tool) mcp.ToolHandler {
	return ToolDef{t}.Handler(func(ctx context.Context, req *mcp.CallToolRequest, a Args) any {
		if t.name == "WaitForMessage" {
			done, ok := s.limits.StartWait(req)
			if !ok {
				return MessageResponse{Message: WaitRefused}
			}
			defer done()
		}
		return t.run(s, ctx, a)
	})
}

// ToolDef is one tool of the interface as the seed defines it: its name,
// scope, MCP definition (description, input and output schemas,
// annotations), argument decoding and result type, without the account's
// handler. Another face serving the seed's tools (package chatface) takes
// them from here, so that the contract is written once.
type ToolDef struct{ t tool }

// SeedTool is the definition of the named tool of the interface.
func SeedTool(name string) (ToolDef, bool) {
	for _, t := range tools {
		if t.name == name {
			t.run = nil
			return ToolDef{t}, true
		}
	}
	return ToolDef{}, false
}

// Name is the tool's name; Scope the scope it needs.
func (d ToolDef) Name() string  { return d.t.name }
func (d ToolDef) Scope() string { return d.t.scope }

// WithDescription is d with another description (the face's own words);
// the names, schemas and result type stay the seed's.
func (d ToolDef) WithDescription(desc string) ToolDef {
	d.t.desc = desc
	return d
}

// MCPTool is d's MCP definition.
func (d ToolDef) MCPTool() *mcp.Tool { return d.t.mcpTool() }

// Decode checks raw against d's arguments: unknown arguments, missing
// required ones and wrong types are errors that name the argument.
func (d ToolDef) Decode(raw json.RawMessage) (Args, error) { return d.t.decode(raw) }

// Handler is the MCP handler of d: it decodes the arguments (a bad one is
// answered with d's result type, Success false and the reason), runs run,
// and returns its result (a GenericResponse or a MessageResponse) as text
// and as structured content.
func (d ToolDef) Handler(run func(ctx context.Context, req *mcp.CallToolRequest, a Args) any) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var res any
		a, err := d.t.decode(req.Params.Arguments)
		switch {
		case err != nil && d.t.message:
			res = MessageResponse{Message: err.Error()}
		case err != nil:
			res = GenericResponse{Message: err.Error()}
		default:
			res = run(ctx, req, a)
		}
		raw, err := json.Marshal(res)
		if err != nil {
			return nil, err
		}
		return &mcp.CallToolResult{
			Content:           []mcp.Content{&mcp.TextContent{Text: string(raw)}},
			StructuredContent: json.RawMessage(raw),
		}, nil
	}
}

func fail(format string, args ...any) GenericResponse {
	return GenericResponse{Message: fmt.Sprintf(format, args...)}
}

func ok(format string, args ...any) GenericResponse {
	return GenericResponse{Success: true, Message: fmt.Sprintf(format, args...)}
}

// bareJID parses an argument that must be a bare JID other than the
// account's own.
func (s *Face) bareJID(name, v string) (string, error) {
	j, err := jid.Parse(v)
	switch {
	case v == "":
		return "", fmt.Errorf("%s is empty: give a bare JID such as user@example.org", name)
	case err != nil:
		return "", fmt.Errorf("%s: %q is not a valid JID", name, v)
	case j.Resourcepart() != "":
		return "", fmt.Errorf("%s: %q is a full JID; give the bare JID %s", name, v, j.Bare())
	case j.Localpart() == "":
		return "", fmt.Errorf("%s: %q is a domain, not a user's bare JID", name, v)
	case j.Bare().Equal(s.acct.JID()):
		return "", fmt.Errorf("%s: %s is this account itself", name, j.Bare())
	}
	return j.Bare().String(), nil
}

func (s *Face) acceptSubscription(ctx context.Context, a Args) any {
	return s.answerSubscription(ctx, a, true)
}

func (s *Face) declineSubscription(ctx context.Context, a Args) any {
	return s.answerSubscription(ctx, a, false)
}

// answerSubscription accepts or declines the pending request of From.
func (s *Face) answerSubscription(ctx context.Context, a Args, accept bool) any {
	from, err := s.bareJID("From", a.Str("From"))
	if err != nil {
		return fail("%v", err)
	}
	c, known := s.acct.Contact(from)
	if !known || !c.PendingIn {
		return fail("%s has no pending presence subscription request", from)
	}
	if err := s.acct.answerSubscription(ctx, from, accept); err != nil {
		return fail("%v", err)
	}
	if !accept {
		return ok("presence subscription of %s declined", from)
	}
	return ok("presence subscription of %s accepted", from)
}

func (s *Face) requestSubscription(ctx context.Context, a Args) any {
	to, err := s.bareJID("To", a.Str("To"))
	if err != nil {
		return fail("%v", err)
	}
	if c, known := s.acct.Contact(to); known && (c.Subscription == "to" || c.Subscription == "both") {
		return ok("already subscribed to the presence of %s", to)
	}
	if err := s.acct.send(ctx, presence("subscribe", to)); err != nil {
		return fail("%v", err)
	}
	return ok("presence subscription requested from %s", to)
}

func (s *Face) requestUnsubscription(ctx context.Context, a Args) any {
	to, err := s.bareJID("To", a.Str("To"))
	if err != nil {
		return fail("%v", err)
	}
	c, known := s.acct.Contact(to)
	if !known || !c.InRoster {
		return fail("%s is not in the roster", to)
	}
	if c.Subscription != "to" && c.Subscription != "both" && !c.PendingOut {
		return ok("not subscribed to the presence of %s", to)
	}
	if err := s.acct.send(ctx, presence("unsubscribe", to)); err != nil {
		return fail("%v", err)
	}
	return ok("presence subscription to %s ended", to)
}

// rosterArgs checks NickName and Groups.
func rosterArgs(a Args) (nick *string, groups []string, setGroups bool, err error) {
	nick = a.Strp("NickName")
	if nick != nil {
		if len(*nick) > maxNameBytes || !wire.ValidText(*nick) || strings.ContainsAny(*nick, "\n\r") {
			return nil, nil, false, fmt.Errorf("NickName must be one line of at most %d bytes", maxNameBytes)
		}
	}
	groups, setGroups = a.Strings("Groups")
	if len(groups) > maxGroups {
		return nil, nil, false, fmt.Errorf("too many Groups: at most %d", maxGroups)
	}
	for i, g := range groups {
		if g == "" || len(g) > maxNameBytes || !wire.ValidText(g) || strings.ContainsAny(g, "\n\r") {
			return nil, nil, false, fmt.Errorf("group %d of Groups must be a non-empty line of at most %d bytes", i, maxNameBytes)
		}
	}
	return nick, slices.Compact(slices.Sorted(slices.Values(groups))), setGroups, nil
}

// rosterItem is the <item/> of a roster set (RFC 6121 2.1.2).
func rosterItem(bare string, nick string, groups []string) xml.TokenReader {
	attrs := []xml.Attr{wire.Attr("jid", bare)}
	if nick != "" {
		attrs = append(attrs, wire.Attr("name", nick))
	}
	kids := make([]xml.TokenReader, 0, len(groups))
	for _, g := range groups {
		kids = append(kids, wire.TextElem(xml.Name{Space: nsRoster, Local: "group"}, g))
	}
	return wire.Elem(xml.Name{Space: nsRoster, Local: "item"}, attrs, kids...)
}

// presence is a directed presence of type typ (subscribe, subscribed, …).
func presence(typ, to string) xml.TokenReader {
	return wire.Elem(xml.Name{Local: "presence"}, []xml.Attr{wire.Attr("type", typ), wire.Attr("to", to)})
}

func (s *Face) addToRoster(ctx context.Context, a Args) any {
	bare, err := s.bareJID("BareJid", a.Str("BareJid"))
	if err != nil {
		return fail("%v", err)
	}
	nick, groups, _, err := rosterArgs(a)
	if err != nil {
		return fail("%v", err)
	}
	if c, known := s.acct.Contact(bare); known && c.InRoster {
		return fail("%s is already in the roster (use UpdateRosterItem)", bare)
	}
	n := ""
	if nick != nil {
		n = *nick
	}
	if err := s.acct.rosterSet(ctx, rosterItem(bare, n, groups)); err != nil {
		return fail("%v", err)
	}
	return ok("%s added to the roster", bare)
}

func (s *Face) updateRosterItem(ctx context.Context, a Args) any {
	bare, err := s.bareJID("BareJid", a.Str("BareJid"))
	if err != nil {
		return fail("%v", err)
	}
	nick, groups, setGroups, err := rosterArgs(a)
	if err != nil {
		return fail("%v", err)
	}
	c, known := s.acct.Contact(bare)
	if !known || !c.InRoster {
		return fail("%s is not in the roster (use AddToRoster)", bare)
	}
	n := c.Name
	if nick != nil {
		n = *nick
	}
	if !setGroups {
		groups = c.Groups
	}
	if err := s.acct.rosterSet(ctx, rosterItem(bare, n, groups)); err != nil {
		return fail("%v", err)
	}
	return ok("%s updated in the roster", bare)
}

func (s *Face) removeFromRoster(ctx context.Context, a Args) any {
	bare, err := s.bareJID("BareJid", a.Str("BareJid"))
	if err != nil {
		return fail("%v", err)
	}
	if c, known := s.acct.Contact(bare); !known || !c.InRoster {
		return fail("%s is not in the roster", bare)
	}
	if err := s.acct.rosterSet(ctx, wire.Elem(xml.Name{Space: nsRoster, Local: "item"}, []xml.Attr{wire.Attr("jid", bare), wire.Attr("subscription", "remove")})); err != nil {
		return fail("%v", err)
	}
	return ok("%s removed from the roster", bare)
}

// langTag is a BCP 47 language tag, loosely (ISO 639 codes included).
var langTag = regexp.MustCompile(`^[A-Za-z]{2,8}(-[A-Za-z0-9]{1,8})*$`)

// LanguageTag reports whether s is a language tag, as SendChatMessage's
// Language must be.
func LanguageTag(s string) bool { return langTag.MatchString(s) }

func (s *Face) sendChatMessage(ctx context.Context, a Args) any {
	to, msg := a.Str("To"), a.Str("Message")
	j, err := jid.Parse(to)
	switch {
	case to == "":
		return fail("To is empty: give the recipient's JID")
	case err != nil:
		return fail("To: %q is not a valid JID", to)
	}
	if msg == "" {
		return fail("Message is empty")
	}
	if len(msg) > MaxMessageBytes {
		return fail("Message is %d bytes; at most %d", len(msg), MaxMessageBytes)
	}
	if !wire.ValidText(msg) {
		return fail("Message holds characters XML cannot carry (control characters or invalid UTF-8)")
	}
	lang := a.Strp("Language")
	language := ""
	if lang != nil && *lang != "" {
		if !langTag.MatchString(*lang) {
			return fail("Language: %q is not a language code such as en or pt-BR", *lang)
		}
		language = *lang
	}
	if err := s.acct.send(ctx, chatMessage(j.String(), newID(), language, msg, a.Bool("IsMarkdown"))); err != nil {
		return fail("%v", err)
	}
	return ok("message sent to %s", j)
}

// messageID accepts an identifier or its mid: URI.
func messageID(v string) (string, bool) {
	id := strings.TrimPrefix(v, "mid:")
	if len(id) != 32 || strings.Trim(id, "0123456789abcdef") != "" {
		return "", false
	}
	return id, true
}

func (st Stored) response(msg string) MessageResponse {
	m := st.Message
	m.Success, m.Message, m.MessageId = true, msg, st.ID
	return m
}

func (s *Face) getMessage(ctx context.Context, a Args) any {
	raw := a.Str("MessageId")
	id, valid := messageID(raw)
	if !valid {
		return MessageResponse{Message: fmt.Sprintf("MessageId: %q is not a message identifier nor a mid: URI", raw)}
	}
	account := s.acct.JID().String()
	var st Stored
	var err error
	if a.Bool("Remove") {
		st, err = s.store.Take(ctx, account, id)
	} else {
		st, err = s.store.Get(ctx, account, id)
	}
	if errors.Is(err, ErrNotFound) {
		return MessageResponse{Message: fmt.Sprintf("no received message has the identifier %s (it may have been removed)", id)}
	}
	if err != nil {
		return MessageResponse{Message: "the message store failed: " + err.Error()}
	}
	if a.Bool("Remove") {
		s.messageRemoved(st.ID)
		return st.response("message found and removed")
	}
	return st.response("message found")
}

func (s *Face) popMessage(ctx context.Context, _ Args) any {
	st, err := s.store.Take(ctx, s.acct.JID().String(), "")
	if errors.Is(err, ErrNotFound) {
		return MessageResponse{Message: "no message has been received"}
	}
	if err != nil {
		return MessageResponse{Message: "the message store failed: " + err.Error()}
	}
	s.messageRemoved(st.ID)
	return st.response("oldest message removed from the received messages")
}

func (s *Face) waitForMessage(ctx context.Context, a Args) any {
	secs := a.Int("TimeoutSeconds")
	if secs < 1 || secs > MaxWaitSeconds {
		return MessageResponse{Message: fmt.Sprintf("TimeoutSeconds must be between 1 and %d", MaxWaitSeconds)}
	}
	timer := time.NewTimer(time.Duration(secs) * time.Second)
	defer timer.Stop()
	account := s.acct.JID().String()
	for {
		arrived := s.acct.Arrived()
		st, err := s.store.Oldest(ctx, account)
		if err == nil {
			return st.response("message received (still queued: remove it with GetMessage or PopMessage)")
		}
		if !errors.Is(err, ErrNotFound) {
			return MessageResponse{Message: "the message store failed: " + err.Error()}
		}
		select {
		case <-arrived:
		case <-timer.C:
			return MessageResponse{Message: fmt.Sprintf("no message received within %d seconds", secs)}
		case <-ctx.Done():
			return MessageResponse{Message: "cancelled"}
		}
	}
}

// chatMessage is a chat message to to with body text; lang, when not
// empty, is its xml:lang, and a message that is not markdown carries
// XEP-0393's <unstyled/>: plain text must not be styled by the recipient.
func chatMessage(to, id, lang, text string, markdown bool) xml.TokenReader {
	attrs := []xml.Attr{wire.Attr("type", "chat"), wire.Attr("to", to), wire.Attr("id", id)}
	if lang != "" {
		attrs = append(attrs, xml.Attr{Name: xml.Name{Space: nsXML, Local: "lang"}, Value: lang})
	}
	var unstyled xml.TokenReader
	if !markdown {
		unstyled = wire.Elem(xml.Name{Space: nsStyling, Local: "unstyled"}, nil)
	}
	return wire.Elem(xml.Name{Local: "message"}, attrs, wire.TextElem(xml.Name{Local: "body"}, text), unstyled)
}
