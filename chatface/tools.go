package chatface

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"agentgw/chat"
	"agentgw/db"
	"agentgw/mcpface/account"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"mellium.im/xmpp/jid"
)

// tool is one tool: its seed definition (mcpface's: names, schemas,
// argument decoding, result type), in this face's words, and its handler.
type tool struct {
	def account.ToolDef
	run func(s *endpointServer, ctx context.Context, a account.Args) any
}

// seed is the named tool of the seed interface, described for a hosted
// endpoint.
func seed(name, desc string, run func(s *endpointServer, ctx context.Context, a account.Args) any) tool {
	d, ok := account.SeedTool(name)
	if !ok {
		panic("chatface: no seed tool " + name)
	}
	return tool{def: d.WithDescription(desc), run: run}
}

// tools are the seed's tools that make sense for a hosted endpoint, then
// WaitForMessage.
var tools = []tool{
	seed("AcceptPresenceSubscription", "Confirm a subscription to this endpoint's presence. The gateway answers subscription requests by its policy; this reports whether the user is subscribed.",
		(*endpointServer).acceptSubscription),
	seed("DeclinePresenceSubscription", "End a user's subscription to this endpoint's presence (they are told: unsubscribed).",
		(*endpointServer).declineSubscription),
	seed("GetMessage", "Get a message this endpoint received by its identifier, and optionally remove it from the received messages.",
		(*endpointServer).getMessage),
	seed("PopMessage", "Get the oldest message this endpoint received and remove it from the received messages.",
		(*endpointServer).popMessage),
	seed("SendChatMessage", "Send a chat message from this endpoint. Only to someone who wrote to it recently or subscribes to its presence, and not after a bounce until they write again.",
		(*endpointServer).sendChatMessage),
	seed("WaitForMessage", "Wait until this endpoint has received a message, then return the oldest without removing it. Fails at the timeout if none arrives.",
		(*endpointServer).waitForMessage),
}

func toolScope(name string) string {
	for _, t := range tools {
		if t.def.Name() == name {
			return t.def.Scope()
		}
	}
	return ""
}

func (s *endpointServer) handler(t tool) mcp.ToolHandler {
	return t.def.Handler(func(ctx context.Context, req *mcp.CallToolRequest, a account.Args) any {
		if t.def.Name() == "WaitForMessage" {
			done, ok := s.limits.StartWait(req)
			if !ok {
				return account.MessageResponse{Message: account.WaitRefused}
			}
			defer done()
		}
		return t.run(s, ctx, a)
	})
}

func generic(ok bool, format string, args ...any) account.GenericResponse {
	return account.GenericResponse{Success: ok, Message: fmt.Sprintf(format, args...)}
}

// bare parses an argument that must be a bare JID.
func bare(name, v string) (jid.JID, error) {
	j, err := jid.Parse(strings.TrimSpace(v))
	if err != nil || j.Localpart() == "" {
		return jid.JID{}, fmt.Errorf("%s must be a bare JID such as user@example.org", name)
	}
	return j.Bare(), nil
}

func (s *endpointServer) sendChatMessage(ctx context.Context, a account.Args) any {
	to, err := bare("To", a.Str("To"))
	if err != nil {
		return generic(false, "%v", err)
	}
	text, lang := a.Str("Message"), a.Str("Language")
	switch {
	case !validText(text):
		return generic(false, "Message must be non-empty UTF-8 text of characters XML allows")
	case len(text) > chat.MaxBody:
		return generic(false, "Message is longer than %d bytes", chat.MaxBody)
	case lang != "" && !account.LanguageTag(lang):
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
		return account.MessageResponse{Message: errNoMessage.Error()}
	}
	if err != nil {
		s.o.Log.Error("chat mcp: read the queue", "endpoint", s.endpoint, "err", err)
		return account.MessageResponse{Message: "internal error"}
	}
	if remove {
		s.o.Chat.QueueTouched(s.endpoint)
	}
	return response(m, msg)
}

func (s *endpointServer) getMessage(ctx context.Context, a account.Args) any {
	id := messageID(a.Str("MessageId"))
	if id == "" {
		return account.MessageResponse{Message: "MessageId is required"}
	}
	remove := a.Bool("Remove")
	msg := "message found"
	if remove {
		msg = "message found and removed from the received messages"
	}
	return s.take(ctx, id, remove, msg)
}

func (s *endpointServer) popMessage(ctx context.Context, _ account.Args) any {
	return s.take(ctx, "", true, "message removed from the received messages")
}

func (s *endpointServer) waitForMessage(ctx context.Context, a account.Args) any {
	secs := a.Int("TimeoutSeconds")
	if secs < 1 || secs > account.MaxWaitSeconds {
		return account.MessageResponse{Message: fmt.Sprintf("TimeoutSeconds must be between 1 and %d", account.MaxWaitSeconds)}
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
			return account.MessageResponse{Message: "internal error"}
		}
		select {
		case <-changed:
		case <-deadline.C:
			return account.MessageResponse{Message: fmt.Sprintf("no message in %d seconds", secs)}
		case <-ctx.Done():
			return account.MessageResponse{Message: "cancelled"}
		}
	}
}

func (s *endpointServer) acceptSubscription(ctx context.Context, a account.Args) any {
	from, err := bare("From", a.Str("From"))
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

func (s *endpointServer) declineSubscription(ctx context.Context, a account.Args) any {
	from, err := bare("From", a.Str("From"))
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
