package cli

import (
	"context"
	"encoding/xml"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"strings"
	"time"

	"agentgw/app"
	"agentgw/c2s"
	"agentgw/chat"
	"agentgw/cli/cmdline"
	"agentgw/db"
	"agentgw/wire"

	"mellium.im/xmpp/jid"
)

// Bounds of agentgw check-blocking (docs/messaging.md).
const (
	// blockingStepTimeout bounds each wait of the check: consent to be
	// recorded, the probe's bounce, the second probe's delivery.
	blockingStepTimeout = 20 * time.Second
	// blockingPoll is how often the database is looked at while waiting.
	blockingPoll = 100 * time.Millisecond
	// blockingQuiet is how long a probe sent while blocked is watched
	// for after the gateway has seen its bounce.
	blockingQuiet = 2 * time.Second
	// blockingSettle is the pause after each message of the account, for
	// the endpoint's answer (if it answers) to arrive.
	blockingSettle = time.Second
)

const checkBlockingUsage = "check-blocking -config FILE -endpoint JID -account JID -password-file FILE [-server HOST:PORT]"

// checkBlocking is `agentgw check-blocking`: the deployment self-test a
// Human Messaging claim needs (spec §"Security Considerations"). A test
// account writes to the endpoint (consent), blocks it with XEP-0191, and
// the endpoint sends it a probe, which must not arrive; the account
// unblocks it and writes again, and a second probe must arrive. The
// probes go through the running gateway's own outbox in the database
// (the one `agentgw serve` sends from), so no new channel or secret is
// needed, and they are subject to the same consent check as any message
// an endpoint sends: only the account that just wrote gets them.
func checkBlocking(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("check-blocking", flag.ContinueOnError)
	cfgPath := fs.String("config", "", "the gateway's configuration file")
	endpointFlag := fs.String("endpoint", "", "the endpoint (bare JID) whose chat is checked")
	accountFlag := fs.String("account", "", "a test account (bare JID) that may chat with the endpoint")
	pwFile := fs.String("password-file", "", "file whose first line is the account's password")
	server := fs.String("server", "", "host:port of the account's server (default: the JID's domain, port 5222)")
	if _, err := parse(fs, args, 0, 0); err != nil {
		return err
	}
	if *cfgPath == "" || *endpointFlag == "" || *accountFlag == "" || *pwFile == "" {
		return fmt.Errorf("%w: %s", errUsage, checkBlockingUsage)
	}
	adm, err := app.LoadAdmin(*cfgPath)
	if err != nil {
		return err
	}
	ep, err := jid.Parse(*endpointFlag)
	if err != nil || ep.Localpart() == "" || ep.Resourcepart() != "" {
		return fmt.Errorf("check-blocking: -endpoint %q is not an endpoint bare JID", *endpointFlag)
	}
	account, err := jid.Parse(*accountFlag)
	if err != nil || account.Localpart() == "" || account.Resourcepart() != "" {
		return fmt.Errorf("check-blocking: -account %q is not an account bare JID", *accountFlag)
	}
	endpoint := ep.String()
	consent, err := adm.ChatConsent(account, endpoint)
	if err != nil {
		return err
	}
	password, err := cmdline.ReadPassword(*pwFile)
	if err != nil {
		return err
	}
	if err := adm.OpenStore(ctx, nil); err != nil {
		return err
	}
	defer adm.Close()
	addr := *server
	if addr == "" {
		addr = net.JoinHostPort(account.Domainpart(), "5222")
	}
	lctx, cancel := context.WithTimeout(ctx, cmdline.LoginTimeout)
	c, err := c2s.Dial(lctx, addr, account, password)
	cancel()
	if err != nil {
		return fmt.Errorf("check-blocking: log in as %s: %w", account, err)
	}
	defer c.Close()
	chk := &blockingCheck{c: c, store: adm.Store, endpoint: endpoint, account: account, consent: consent, out: stdout,
		seen: map[string]bool{}}
	return chk.run(ctx)
}

// blockingCheck is one run of check-blocking.
type blockingCheck struct {
	c        *c2s.Client
	store    *db.Store
	endpoint string
	account  jid.JID
	consent  time.Duration
	out      io.Writer
	// seen holds the bodies of the endpoint's messages received so far.
	seen map[string]bool
}

func (k *blockingCheck) say(format string, args ...any) {
	fmt.Fprintf(k.out, "check-blocking: "+format+"\n", args...)
}

func (k *blockingCheck) run(ctx context.Context) error {
	if err := k.c.Send(ctx, wire.Elem(xml.Name{Local: "presence"}, nil)); err != nil {
		return err
	}
	// A block left by an earlier run would keep the first message from
	// reaching the endpoint.
	if err := k.blocking(ctx, "unblock"); err != nil {
		return err
	}
	if err := k.write(ctx, "consent"); err != nil {
		return err
	}
	k.say("%s wrote to %s; consent recorded", k.account, k.endpoint)

	if err := k.blocking(ctx, "block"); err != nil {
		return err
	}
	k.say("%s blocked %s (XEP-0191)", k.account, k.endpoint)
	first := "agentgw check-blocking probe 1 " + chat.NewID()
	if err := k.probe(ctx, first); err != nil {
		return err
	}
	bounced, err := k.waitBounce(ctx, first)
	if err != nil {
		return err
	}
	if bounced {
		k.say("probe 1 not delivered: the server bounced it, and the gateway stopped writing to %s", k.account.Bare())
	} else {
		k.say("probe 1 not delivered in %s (no bounce came back)", blockingStepTimeout)
	}

	if err := k.blocking(ctx, "unblock"); err != nil {
		return err
	}
	if err := k.write(ctx, "consent again"); err != nil {
		return err
	}
	k.say("%s unblocked %s and wrote again", k.account, k.endpoint)
	second := "agentgw check-blocking probe 2 " + chat.NewID()
	if err := k.probe(ctx, second); err != nil {
		return err
	}
	if !k.await(ctx, blockingStepTimeout, func() bool { return k.seen[second] }) {
		return errors.New("check-blocking: FAIL: probe 2 was not delivered after the unblock (is agentgw serve running on this configuration?)")
	}
	if k.seen[first] {
		return errors.New("check-blocking: FAIL: probe 1 was delivered while the endpoint was blocked")
	}
	k.say("probe 2 delivered after the unblock")
	k.say("PASS: %s enforces XEP-0191 blocking of %s", k.account.Domainpart(), k.endpoint)
	return nil
}

// nsBlocking is XEP-0191's namespace.
const nsBlocking = "urn:xmpp:blocking"

// blocking sends an XEP-0191 block or unblock of the endpoint.
func (k *blockingCheck) blocking(ctx context.Context, op string) error {
	ictx, cancel := context.WithTimeout(ctx, blockingStepTimeout)
	defer cancel()
	el, err := k.c.IQElement(ictx, "set", "", wire.Elem(xml.Name{Space: nsBlocking, Local: op}, nil,
		wire.Elem(xml.Name{Space: nsBlocking, Local: "item"}, []xml.Attr{wire.Attr("jid", k.endpoint)})))
	if err != nil {
		return fmt.Errorf("check-blocking: %s: %w", op, err)
	}
	if typ, _ := el.AttrValue("type"); typ != "result" {
		return fmt.Errorf("check-blocking: FAIL: the server refused the XEP-0191 %s (is mod_blocklist or mod_blocking on?)", op)
	}
	return nil
}

// write sends the endpoint a chat from the account and waits until the
// gateway has recorded it (consent, and the end of any block).
func (k *blockingCheck) write(ctx context.Context, text string) error {
	msg := wire.Elem(xml.Name{Local: "message"}, []xml.Attr{wire.Attr("type", "chat"), wire.Attr("to", k.endpoint), wire.Attr("id", chat.NewID())},
		wire.TextElem(xml.Name{Local: "body"}, "agentgw check-blocking: "+text))
	if err := k.c.Send(ctx, msg); err != nil {
		return err
	}
	if !k.await(ctx, blockingStepTimeout, func() bool {
		return k.store.ChatConsent(ctx, k.endpoint, k.account.String(), k.consent) == nil
	}) {
		return errors.New("check-blocking: FAIL: the gateway did not record the account's message (is agentgw serve running on this configuration, and does the account's server reach it?)")
	}
	// Let what the endpoint answers leave the outbox and arrive before
	// the next step: a block would bounce it, and the bounce would stop
	// the probe.
	k.await(ctx, blockingStepTimeout, func() bool {
		pending, err := k.store.ChatOutbox(ctx, 1000)
		if err != nil {
			return true
		}
		for _, m := range pending {
			if m.Endpoint == k.endpoint && m.Peer == k.account.String() {
				return false
			}
		}
		return true
	})
	k.await(ctx, blockingSettle, func() bool { return false })
	return nil
}

// probe puts a message to the account in the gateway's outbox, where
// the running gateway finds it and sends it from the endpoint. It goes to
// the bare JID: Prosody drops a blocked message to an online full JID
// silently (its issue #690) but bounces one to the bare JID, and the
// bounce is what tells the gateway to stop.
func (k *blockingCheck) probe(ctx context.Context, body string) error {
	m := db.ChatOut{Endpoint: k.endpoint, Recipient: k.account.String(), Peer: k.account.String(),
		OriginID: chat.NewID(), Type: "chat", Body: body}
	if _, err := k.store.ChatSend(ctx, m, k.consent); err != nil {
		return fmt.Errorf("check-blocking: queue a probe: %w", err)
	}
	return nil
}

// waitBounce waits until the gateway has seen the probe's bounce, which
// blocks the account in its records, or until the probe has left the
// outbox and blockingStepTimeout passed. A probe delivered is a failure.
func (k *blockingCheck) waitBounce(ctx context.Context, body string) (bounced bool, err error) {
	ok := k.await(ctx, blockingStepTimeout, func() bool {
		return k.seen[body] || errors.Is(k.store.ChatConsent(ctx, k.endpoint, k.account.String(), k.consent), db.ErrChatBlocked)
	})
	if k.seen[body] {
		return false, errors.New("check-blocking: FAIL: probe 1 was delivered while the endpoint was blocked: this deployment must not claim the Human Messaging profile")
	}
	if !ok {
		pending, err := k.store.ChatOutbox(ctx, 1000)
		if err != nil {
			return false, err
		}
		for _, m := range pending {
			if m.Body == body {
				return false, errors.New("check-blocking: FAIL: the gateway did not send the probe (is agentgw serve running on this configuration?)")
			}
		}
		return false, nil
	}
	// Anything that was on its way has arrived by now.
	k.await(ctx, blockingQuiet, func() bool { return k.seen[body] })
	if k.seen[body] {
		return false, errors.New("check-blocking: FAIL: probe 1 was delivered while the endpoint was blocked")
	}
	return true, nil
}

// await polls cond, reading what arrives meanwhile, until it holds or d
// has passed.
func (k *blockingCheck) await(ctx context.Context, d time.Duration, cond func() bool) bool {
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	tick := time.NewTicker(blockingPoll)
	defer tick.Stop()
	for {
		if cond() {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-deadline.C:
			return cond()
		case el, ok := <-k.c.Incoming():
			if !ok {
				return cond()
			}
			k.note(el)
		case <-tick.C:
		}
	}
}

// note records the body of a message from the endpoint.
func (k *blockingCheck) note(el wire.Element) {
	if el.Start.Name.Local != "message" {
		return
	}
	from, _ := el.AttrValue("from")
	if f, err := jid.Parse(from); err != nil || f.Bare().String() != k.endpoint {
		return
	}
	if typ, _ := el.AttrValue("type"); typ == "error" {
		return
	}
	for _, c := range el.Children() {
		if c.Start.Name.Local == "body" {
			k.seen[strings.TrimSpace(c.Text())] = true
		}
	}
}
