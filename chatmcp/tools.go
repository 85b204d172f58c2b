package chatmcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"agentgw/chat"
	"agentgw/db"
	"agentgw/mcpserver"
	"agentgw/mcpserver/scope"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"mellium.im/xmpp/jid"
)

// argKind is the JSON type of a tool argument.
type argKind int

const (
	kindString argKind = iota
	kindBool
	kindInt
)

// arg is one argument, as the seed defines it.
type arg struct {
	name     string
	kind     argKind
	required bool
	def      any
	desc     string
}

// tool is one tool: its seed definition and handler.
type tool struct {
	name, title, desc    string
	scope                string
	destroys, idempotent bool
	readOnly             bool
	args                 []arg
	message              bool
	run                  func(s *endpointServer, ctx context.Context, a map[string]any) any
}

// tools are the seed's tools that make sense for a hosted endpoint, then
// WaitForMessage.
var tools = []tool{
	{
		name: "AcceptPresenceSubscription", title: "Accept presence subscription", scope: scope.PresenceAccept,
		desc: "Confirm a subscription to this endpoint's presence. The gateway answers subscription requests by its policy; this reports whether the user is subscribed.",
		args: []arg{{name: "From", kind: kindString, required: true, desc: "Bare JID of the user whose presence subscription is accepted."}},
		run:  (*endpointServer).acceptSubscription,
	},
	{
		name: "DeclinePresenceSubscription", title: "Decline presence subscription", scope: scope.PresenceDecline,
		desc: "End a user's subscription to this endpoint's presence (they are told: unsubscribed).",
		args: []arg{{name: "From", kind: kindString, required: true, desc: "Bare JID of the user whose presence subscription is declined."}},
		run:  (*endpointServer).declineSubscription,
	},
	{
		name: "GetMessage", title: "Get message", scope: scope.MessageGet, destroys: true, message: true,
		desc: "Get a message this endpoint received by its identifier, and optionally remove it from the received messages.",
		args: []arg{
			{name: "MessageId", kind: kindString, required: true, desc: "The message identifier, or its mid: resource URI."},
			{name: "Remove", kind: kindBool, def: false, desc: "Remove the message from the received messages."},
		},
		run: (*endpointServer).getMessage,
	},
	{
		name: "PopMessage", title: "Pop message", scope: scope.MessageGet, destroys: true, message: true,
		desc: "Get the oldest message this endpoint received and remove it from the received messages.",
		run:  (*endpointServer).popMessage,
	},
	{
		name: "SendChatMessage", title: "Send chat message", scope: scope.MessageSend,
		desc: "Send a chat message from this endpoint. Only to someone who wrote to it recently or subscribes to its presence, and not after a bounce until they write again.",
		args: []arg{
			{name: "To", kind: kindString, required: true, desc: "Bare JID of the recipient."},
			{name: "Message", kind: kindString, required: true, desc: "The message text: plain text, or Markdown."},
			{name: "IsMarkdown", kind: kindBool, def: false, desc: "The message is Markdown (true) or plain text (false)."},
			{name: "Language", kind: kindString, desc: "Language of the message (ISO 639 code or BCP 47 tag), if known."},
		},
		run: (*endpointServer).sendChatMessage,
	},
	{
		name: "WaitForMessage", title: "Wait for message", scope: scope.MessageGet, readOnly: true, idempotent: true, message: true,
		desc: "Wait until this endpoint has received a message, then return the oldest without removing it. Fails at the timeout if none arrives.",
		args: []arg{{name: "TimeoutSeconds", kind: kindInt, def: DefaultWaitSeconds, desc: fmt.Sprintf("How long to wait, in seconds (1 to %d).", MaxWaitSeconds)}},
		run:  (*endpointServer).waitForMessage,
	},
}

func toolScope(name string) string {
	for _, t := range tools {
		if t.name == name {
			return t.scope
		}
	}
	return ""
}

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
			"Type":             map[string]any{"type": []string{"string", "null"}, "enum": []any{"Chat", "Error", "GroupChat", "Headline", "Normal", nil}},
			"ErrorMessage":     map[string]any{"type": []string{"boolean", "null"}},
			"ErrorMessageCode": map[string]any{"type": []string{"integer", "null"}},
			"ErrorMessageType": map[string]any{"type": []string{"string", "null"}, "enum": []any{"None", "Auth", "Cancel", "Continue", "Modify", "Wait", "Undefined", nil}},
			"ErrorMessageText": map[string]any{"type": "string"},
		},
		"required": []string{"Success", "Message"},
	}
)

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
	return &mcp.Tool{Name: t.name, Title: t.title, Description: t.desc, InputSchema: in, OutputSchema: out,
		Annotations: &mcp.ToolAnnotations{Title: t.title, ReadOnlyHint: t.readOnly, DestructiveHint: &destroys, IdempotentHint: t.idempotent, OpenWorldHint: &open}}
}

func (t tool) decode(raw json.RawMessage) (map[string]any, error) {
	in := map[string]json.RawMessage{}
	if len(raw) > 0 && string(raw) != "null" {
		if err := json.Unmarshal(raw, &in); err != nil {
			return nil, errors.New("the arguments must be a JSON object")
		}
	}
	for name := range in {
		if !slices.ContainsFunc(t.args, func(a arg) bool { return a.name == name }) {
			return nil, fmt.Errorf("unknown argument %q", name)
		}
	}
	out := map[string]any{}
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
			err = json.Unmarshal(v, &s)
			out[a.name] = s
		case kindBool:
			var b bool
			err = json.Unmarshal(v, &b)
			out[a.name] = b
		case kindInt:
			var n json.Number
			if err = json.Unmarshal(v, &n); err == nil {
				var i int64
				i, err = n.Int64()
				out[a.name] = int(max(min(i, 1<<31), -1<<31))
			}
		}
		if err != nil {
			return nil, fmt.Errorf("%s must be %s", a.name, [...]string{"a string", "a boolean", "an integer"}[a.kind])
		}
	}
	return out, nil
}

func (s *endpointServer) handler(t tool) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var res any
		a, err := t.decode(req.Params.Arguments)
		switch {
		case err != nil && t.message:
			res = mcpserver.MessageResponse{Message: err.Error()}
		case err != nil:
			res = mcpserver.GenericResponse{Message: err.Error()}
		case t.name == "WaitForMessage":
			done, ok := s.limits.StartWait(req)
			if !ok {
				res = mcpserver.MessageResponse{Message: mcpserver.WaitRefused}
				break
			}
			res = t.run(s, ctx, a)
			done()
		default:
			res = t.run(s, ctx, a)
		}
		raw, err := json.Marshal(res)
		if err != nil {
			return nil, err
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(raw)}}, StructuredContent: json.RawMessage(raw)}, nil
	}
}

func str(a map[string]any, name string) string { v, _ := a[name].(string); return v }

func generic(ok bool, format string, args ...any) mcpserver.GenericResponse {
	return mcpserver.GenericResponse{Success: ok, Message: fmt.Sprintf(format, args...)}
}

// bare parses an argument that must be a bare JID.
func bare(name, v string) (jid.JID, error) {
	j, err := jid.Parse(strings.TrimSpace(v))
	if err != nil || j.Localpart() == "" {
		return jid.JID{}, fmt.Errorf("%s must be a bare JID such as user@example.org", name)
	}
	return j.Bare(), nil
}

var langTag = regexp.MustCompile(`^[A-Za-z]{2,8}(-[A-Za-z0-9]{1,8})*$`)

func (s *endpointServer) sendChatMessage(ctx context.Context, a map[string]any) any {
	to, err := bare("To", str(a, "To"))
	if err != nil {
		return generic(false, "%v", err)
	}
	text, lang := str(a, "Message"), str(a, "Language")
	switch {
	case !validText(text):
		return generic(false, "Message must be non-empty UTF-8 text")
	case len(text) > chat.MaxBody:
		return generic(false, "Message is longer than %d bytes", chat.MaxBody)
	case lang != "" && !langTag.MatchString(lang):
		return generic(false, "Language must be a language tag such as en or pt-BR")
	}
	id, err := s.o.Chat.Send(ctx, s.o.Policy(), s.endpoint, to, text, lang)
	switch {
	case errors.Is(err, db.ErrChatNoConsent), errors.Is(err, db.ErrChatBlocked), errors.Is(err, chat.ErrNotGranted):
		return generic(false, "not sent to %s: %v", to, err)
	case err != nil:
		s.o.Log.Error("chat mcp: send", "endpoint", s.endpoint, "err", err)
		return generic(false, "not sent: internal error")
	}
	return generic(true, "queued for delivery to %s (origin-id %s)", to, id)
}

func messageID(v string) string {
	return strings.TrimPrefix(strings.TrimSpace(v), "mid:")
}

func (s *endpointServer) take(ctx context.Context, id string, remove bool, msg string) any {
	m, err := s.o.Chat.Store().ChatTake(ctx, s.endpoint, id, remove)
	if errors.Is(err, db.ErrNotFound) {
		return mcpserver.MessageResponse{Message: errNoMessage.Error()}
	}
	if err != nil {
		s.o.Log.Error("chat mcp: read the queue", "endpoint", s.endpoint, "err", err)
		return mcpserver.MessageResponse{Message: "internal error"}
	}
	if remove {
		s.o.Chat.QueueTouched(s.endpoint)
	}
	return response(m, msg)
}

func (s *endpointServer) getMessage(ctx context.Context, a map[string]any) any {
	id := messageID(str(a, "MessageId"))
	if id == "" {
		return mcpserver.MessageResponse{Message: "MessageId is required"}
	}
	remove, _ := a["Remove"].(bool)
	msg := "message found"
	if remove {
		msg = "message found and removed from the received messages"
	}
	return s.take(ctx, id, remove, msg)
}

func (s *endpointServer) popMessage(ctx context.Context, _ map[string]any) any {
	return s.take(ctx, "", true, "message removed from the received messages")
}

func (s *endpointServer) waitForMessage(ctx context.Context, a map[string]any) any {
	secs, _ := a["TimeoutSeconds"].(int)
	if secs < 1 || secs > MaxWaitSeconds {
		return mcpserver.MessageResponse{Message: fmt.Sprintf("TimeoutSeconds must be between 1 and %d", MaxWaitSeconds)}
	}
	deadline := time.NewTimer(time.Duration(secs) * time.Second)
	defer deadline.Stop()
	for {
		changed := s.o.Chat.QueueChanged(s.endpoint)
		m, err := s.o.Chat.Store().ChatTake(ctx, s.endpoint, "", false)
		if err == nil {
			return response(m, "message received")
		}
		if !errors.Is(err, db.ErrNotFound) {
			s.o.Log.Error("chat mcp: read the queue", "endpoint", s.endpoint, "err", err)
			return mcpserver.MessageResponse{Message: "internal error"}
		}
		select {
		case <-changed:
		case <-deadline.C:
			return mcpserver.MessageResponse{Message: fmt.Sprintf("no message in %d seconds", secs)}
		case <-ctx.Done():
			return mcpserver.MessageResponse{Message: "cancelled"}
		}
	}
}

func (s *endpointServer) acceptSubscription(ctx context.Context, a map[string]any) any {
	from, err := bare("From", str(a, "From"))
	if err != nil {
		return generic(false, "%v", err)
	}
	sub, err := s.o.Chat.Store().Subscribed(ctx, s.endpoint, from.String())
	if err != nil {
		return generic(false, "internal error")
	}
	if !sub {
		return generic(false, "%s has no subscription to accept: the gateway answers subscription requests by its policy", from)
	}
	return generic(true, "%s is subscribed to %s's presence", from, s.endpoint)
}

func (s *endpointServer) declineSubscription(ctx context.Context, a map[string]any) any {
	from, err := bare("From", str(a, "From"))
	if err != nil {
		return generic(false, "%v", err)
	}
	removed, err := s.o.Chat.Unsubscribed(ctx, s.endpoint, from)
	if err != nil {
		return generic(false, "internal error")
	}
	if !removed {
		return generic(false, "%s is not subscribed to %s's presence", from, s.endpoint)
	}
	return generic(true, "%s's subscription to %s's presence ended", from, s.endpoint)
}
