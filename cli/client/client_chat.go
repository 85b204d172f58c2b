package client

import (
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"strings"
	"time"

	"agentgw/chat"
	"agentgw/cli/cmdline"
	"agentgw/wire"

	"mellium.im/xmpp/jid"
)

// chatTimeout bounds the wait for an endpoint's answer to `client chat`;
// chatAfterReceipt the wait once the endpoint has sent its receipt
// (XEP-0184): a builtin or exec answerer answers right after it, while a
// queue endpoint's message waits for an MCP client that may answer much
// later or never (docs/messaging.md).
const (
	chatTimeout      = 30 * time.Second
	chatAfterReceipt = 5 * time.Second
)

// parseChat parses `client chat ENDPOINT TEXT…`.
func parseChat(rest []string) (clientRun, error) {
	if len(rest) < 2 {
		return nil, fmt.Errorf("%w: client chat ENDPOINT TEXT", cmdline.ErrUsage)
	}
	ep, err := endpointArg(rest[0])
	if err != nil {
		return nil, err
	}
	text := strings.Join(rest[1:], " ")
	return func(ctx context.Context, cmd *clientCmd, _ jid.JID) error { return cmd.chat(ctx, ep, text) }, nil
}

// chatAnswer is what `client chat -json` prints.
type chatAnswer struct {
	From     string `json:"from"`
	Body     string `json:"body"`
	OriginID string `json:"origin_id,omitempty"`
	Received bool   `json:"received"`
	// Queued is set when the endpoint received the message (its receipt
	// came) and no answer followed within chatAfterReceipt: it waits for
	// the endpoint's answerer, as a chat = "queue" endpoint's does.
	Queued bool `json:"queued,omitempty"`
}

// chat sends one chat message to an endpoint (the Human Messaging
// profile, docs/messaging.md) with a receipt request, and prints the
// first answer. When the receipt comes and no answer within
// chatAfterReceipt, the message is in the endpoint's hands (a queue
// endpoint's MCP client answers when it answers): that is success, said
// as such, not a missing answer.
func (cmd *clientCmd) chat(ctx context.Context, ep jid.JID, text string) error {
	sender, ok := cmd.s.c.(interface {
		Send(context.Context, xml.TokenReader) error
	})
	if !ok {
		return errors.New("client: chat: this session cannot send messages")
	}
	msgID := chat.NewID()
	msg := wire.Elem(xml.Name{Local: "message"}, []xml.Attr{wire.Attr("type", "chat"), wire.Attr("to", ep.String()), wire.Attr("id", msgID)},
		wire.TextElem(xml.Name{Local: "body"}, text),
		wire.Elem(xml.Name{Space: chat.NSReceipts, Local: "request"}, nil))
	if err := sender.Send(ctx, msg); err != nil {
		return fmt.Errorf("client: chat: %w", err)
	}
	var ans chatAnswer
	timeout := time.After(chatTimeout)
	var afterReceipt <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-afterReceipt:
			ans.From, ans.Queued = ep.String(), true
			if cmd.json {
				return cmd.emit(ans)
			}
			cmd.printf("%s received the message (receipt) and has not answered within %s: it waits for the endpoint's answerer "+
				"(for a chat = \"queue\" endpoint, an MCP client), whose answer will come to this account\n", ep, chatAfterReceipt)
			return nil
		case <-timeout:
			return fmt.Errorf("client: chat: no receipt and no answer from %s in %s", ep, chatTimeout)
		case el, ok := <-cmd.s.c.Incoming():
			if !ok {
				return errors.New("client: chat: the session ended")
			}
			if el.Start.Name.Local != "message" {
				continue
			}
			from, _ := el.AttrValue("from")
			if f, err := jid.Parse(from); err != nil || !f.Bare().Equal(ep) {
				continue
			}
			if typ, _ := el.AttrValue("type"); typ == "error" {
				return fmt.Errorf("client: chat: %s does not take messages from you (the message bounced)", ep)
			}
			in := chat.ParseInbound(jid.JID{}, jid.JID{}, el)
			for _, c := range el.Children() {
				if c.Start.Name == (xml.Name{Space: chat.NSReceipts, Local: "received"}) {
					if id, _ := c.AttrValue("id"); id == msgID && !ans.Received {
						ans.Received = true
						afterReceipt = time.After(chatAfterReceipt)
					}
				}
			}
			if in.Body == "" {
				continue
			}
			ans.From, ans.Body, ans.OriginID = from, in.Body, in.OriginID
			if cmd.json {
				return cmd.emit(ans)
			}
			cmd.printf("%s: %s\n", ep, in.Body)
			return nil
		}
	}
}
