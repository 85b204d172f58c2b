package integration

import (
	"context"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"agentgw/c2s"
	"agentgw/internal/harness"
	"agentgw/internal/testwait"
	"agentgw/mcpface/account"
	"agentgw/wire"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"mellium.im/xmpp/jid"
)

// Tests of `agentgw mcp` (docs/mcp-server.md): the binary logged in as an
// account of Prosody (home.example), talking across s2s with accounts of
// ejabberd (remote.example), driven by go-sdk's client over stdio and HTTP.

const (
	mcpFullToken = "integration-full-token-0123456789"
	mcpSendToken = "integration-send-token-0123456789"
)

// mcpAccount is a fresh account for `agentgw mcp` and its configuration.
type mcpAccount struct {
	jid    string
	dir    string
	config string
}

var mcpUsers struct {
	sync.Mutex
	n int
}

// newMCPAccount registers a fresh Prosody account and writes an MCP-only
// configuration for it; server overrides the c2s address (a proxy).
func newMCPAccount(t *testing.T, server string) *mcpAccount {
	t.Helper()
	return newMCPAccountWith(t, server, "", "")
}

// newMCPAccountWith is newMCPAccount with the account's accept_from (""
// leaves the default) and more [mcp] keys.
func newMCPAccountWith(t *testing.T, server, acceptFrom, mcpKeys string) *mcpAccount {
	t.Helper()
	need(t)
	mcpUsers.Lock()
	mcpUsers.n++
	local := fmt.Sprintf("mcp%d-%d", os.Getpid()%1000, mcpUsers.n)
	mcpUsers.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := suite.env.Register(ctx, local, harness.HomeDomain, password); err != nil {
		t.Fatal(err)
	}
	if server == "" {
		server = suite.env.ProsodyC2S
	}
	a := &mcpAccount{jid: local + "@" + harness.HomeDomain, dir: t.TempDir()}
	for name, content := range map[string]string{"account.password": password, "full.token": mcpFullToken, "send.token": mcpSendToken} {
		if err := os.WriteFile(filepath.Join(a.dir, name), []byte(content+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if !strings.Contains(mcpKeys, "database =") {
		// The default, agentgw-mcp.db beside the configuration, on SQLite.
		mcpKeys = mcpStoreKey(t, "agentgw-mcp.db") + "\n" + mcpKeys
	}
	acceptKey := ""
	if acceptFrom != "" {
		acceptKey = fmt.Sprintf("accept_from = %q", acceptFrom)
	}
	body := fmt.Sprintf(`
[log]
level = "debug"

[mcp]
queue_max = 50
%s

[[mcp.account]]
jid = %q
password_file = "account.password"
server = %q
%s

[[mcp.token]]
file = "full.token"
account = %q
scopes = ["*"]

[[mcp.token]]
file = "send.token"
account = %q
scopes = ["OAUTH.Scope.MCP.XMPP.Tools.Message.Send"]
`, mcpKeys, a.jid, server, acceptKey, a.jid, a.jid)
	a.config = filepath.Join(a.dir, "mcp.toml")
	if err := os.WriteFile(a.config, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := agentgw(ctx, "check-config", "-config", a.config); err != nil || !strings.Contains(out, "ok: mcp accounts="+a.jid) {
		t.Fatalf("check-config: %v %s", err, out)
	}
	return a
}

// remoteUser registers a fresh ejabberd account, logs it in and sends
// initial presence after fetching the roster.
func remoteUser(t *testing.T, name string) *c2s.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	local := fmt.Sprintf("%s%d", name, time.Now().UnixNano()%1e9)
	if err := suite.env.Register(ctx, local, harness.RemoteDomain, password); err != nil {
		t.Fatal(err)
	}
	c := login(t, local, harness.RemoteDomain)
	goOnline(t, c)
	return c
}

// mcpSession is a go-sdk client session with `agentgw mcp`.
type mcpSession struct {
	*mcp.ClientSession
	stderr *syncBuf
	events chan string // "list_changed", "updated URI"
}

func (m *mcpSession) handlers() *mcp.ClientOptions {
	return &mcp.ClientOptions{
		ResourceListChangedHandler: func(context.Context, *mcp.ResourceListChangedRequest) {
			select {
			case m.events <- "list_changed":
			default:
			}
		},
		ResourceUpdatedHandler: func(_ context.Context, r *mcp.ResourceUpdatedNotificationRequest) {
			select {
			case m.events <- "updated " + r.Params.URI:
			default:
			}
		},
	}
}

// startMCPStdio runs `agentgw mcp` over stdio and waits for its XMPP
// stream.
func startMCPStdio(t *testing.T, a *mcpAccount) *mcpSession {
	t.Helper()
	m := &mcpSession{stderr: &syncBuf{}, events: make(chan string, 256)}
	cmd := exec.Command(suite.bin, "mcp", "-config", a.config)
	cmd.Stderr = m.stderr
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := mcp.NewClient(&mcp.Implementation{Name: "integration", Version: "1"}, m.handlers())
	cs, err := c.Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: 5 * time.Second}, legacySession)
	if err != nil {
		t.Fatalf("connect: %v\n%s", err, m.stderr)
	}
	m.ClientSession = cs
	t.Cleanup(func() { cs.Close() })
	waitMCPLog(t, m.stderr, "xmpp stream up", 1)
	return m
}

// waitLog waits until the log holds n lines containing s.
func waitMCPLog(t *testing.T, log *syncBuf, s string, n int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for strings.Count(log.String(), s) < n {
		if time.Now().After(deadline) {
			t.Fatalf("no %q (x%d) in the log:\n%s", s, n, log)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// mcpCall calls a tool and returns its structuredContent.
func mcpCall(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) map[string]any {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	raw, _ := json.Marshal(res.StructuredContent)
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("%s: %s: %v", name, raw, err)
	}
	return out
}

func mustSucceed(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) map[string]any {
	t.Helper()
	r := mcpCall(t, cs, name, args)
	if r["Success"] != true {
		t.Fatalf("%s(%v): %v", name, args, r)
	}
	return r
}

// readContact reads the xmpp: resource of bare.
func readContact(t *testing.T, cs *mcp.ClientSession, bare string) account.Contact {
	t.Helper()
	res, err := cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: account.ContactURI(bare)})
	if err != nil {
		t.Fatalf("read %s: %v", bare, err)
	}
	var c account.Contact
	if err := json.Unmarshal([]byte(res.Contents[0].Text), &c); err != nil {
		t.Fatal(err)
	}
	return c
}

// eventually retries check until it holds or 30 s pass.
func eventually(t *testing.T, what string, check func() bool) {
	t.Helper()
	testwait.Until(t, 30*time.Second, what, check)
}

// awaitEvent waits for a notification.
func (m *mcpSession) awaitEvent(t *testing.T, want string) {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		select {
		case e := <-m.events:
			if e == want {
				return
			}
		case <-deadline:
			t.Fatalf("no notification %q", want)
		}
	}
}

// awaitMessage returns the next message stanza c receives from bare.
func awaitMessage(t *testing.T, c *c2s.Client, from string) wire.Element {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		select {
		case el, ok := <-c.Incoming():
			if !ok {
				t.Fatalf("session ended: %v", c.Err())
			}
			if el.Start.Name.Local != "message" {
				continue
			}
			if j, err := jid.Parse(attr(el, "from")); err == nil && j.Bare().String() == from {
				return el
			}
		case <-deadline:
			t.Fatalf("no message from %s", from)
		}
	}
}

func bareOf(c *c2s.Client) string { return c.JID().Bare().String() }

func TestMCPServerStdio(t *testing.T) {
	a := newMCPAccount(t, "")
	m := startMCPStdio(t, a)
	ctx := context.Background()
	if v := m.InitializeResult().ProtocolVersion; v != "2025-11-25" {
		t.Errorf("negotiated %s", v)
	}
	dave := remoteUser(t, "dave")
	daveJID := bareOf(dave)
	daveURI := account.ContactURI(daveJID)
	if err := m.Subscribe(ctx, &mcp.SubscribeParams{URI: daveURI}); err != nil {
		t.Fatal(err)
	}

	t.Run("subscribe", func(t *testing.T) {
		mustSucceed(t, m.ClientSession, "RequestPresenceSubscription", map[string]any{"To": daveJID})
		p := awaitPresence(t, dave, a.jid, 30*time.Second)
		expectType(t, p, "subscribe")
		m.awaitEvent(t, "updated "+daveURI)
		if c := readContact(t, m.ClientSession, daveJID); !c.InRoster || !c.PendingOut {
			t.Fatalf("after the request: %+v", c)
		}
		sendRaw(t, dave, `<presence type="subscribed" to="`+a.jid+`"/>`)
		eventually(t, "subscription to", func() bool { return readContact(t, m.ClientSession, daveJID).Subscription == "to" })
		// Dave's presence arrives once we are subscribed.
		sendRaw(t, dave, `<presence><show>away</show><status>at lunch</status><priority>5</priority></presence>`)
		eventually(t, "dave's presence", func() bool {
			c := readContact(t, m.ClientSession, daveJID)
			return len(c.Presence) == 1 && c.Presence[0].Show == "away" && c.Presence[0].Status == "at lunch" && c.Presence[0].Priority == 5
		})
	})

	t.Run("accept", func(t *testing.T) {
		sendRaw(t, dave, `<presence type="subscribe" to="`+a.jid+`"/>`)
		eventually(t, "pending request", func() bool { return readContact(t, m.ClientSession, daveJID).PendingIn })
		mustSucceed(t, m.ClientSession, "AcceptPresenceSubscription", map[string]any{"From": daveJID})
		for p := awaitPresence(t, dave, a.jid, 30*time.Second); p.typ != "subscribed"; p = awaitPresence(t, dave, a.jid, 30*time.Second) {
			t.Logf("skipped %s", p.raw)
		}
		eventually(t, "subscription both", func() bool { return readContact(t, m.ClientSession, daveJID).Subscription == "both" })
		if r := mcpCall(t, m.ClientSession, "AcceptPresenceSubscription", map[string]any{"From": daveJID}); r["Success"] != false {
			t.Fatalf("second accept: %v", r)
		}
	})

	t.Run("decline", func(t *testing.T) {
		erin := remoteUser(t, "erin")
		sendRaw(t, erin, `<presence type="subscribe" to="`+a.jid+`"/>`)
		eventually(t, "erin's request", func() bool {
			res, err := m.ListResources(ctx, nil)
			if err != nil {
				return false
			}
			for _, r := range res.Resources {
				if r.URI == account.ContactURI(bareOf(erin)) {
					return readContact(t, m.ClientSession, bareOf(erin)).PendingIn
				}
			}
			return false
		})
		mustSucceed(t, m.ClientSession, "DeclinePresenceSubscription", map[string]any{"From": bareOf(erin)})
		for {
			p := awaitPresence(t, erin, a.jid, 30*time.Second)
			if p.typ == "unsubscribed" {
				break
			}
		}
	})

	t.Run("messages", func(t *testing.T) {
		// WaitForMessage returns on arrival.
		got := make(chan map[string]any, 1)
		go func() {
			res, err := m.CallTool(ctx, &mcp.CallToolParams{Name: "WaitForMessage", Arguments: map[string]any{"TimeoutSeconds": 60}})
			if err != nil {
				got <- map[string]any{"err": err.Error()}
				return
			}
			raw, _ := json.Marshal(res.StructuredContent)
			var out map[string]any
			json.Unmarshal(raw, &out)
			got <- out
		}()
		time.Sleep(300 * time.Millisecond) // let the wait begin; the result is the same either way
		sendRaw(t, dave, `<message type="chat" to="`+a.jid+`" id="sender-id-1"><body>hello over s2s</body><thread parent="p1">t1</thread></message>`)
		r := <-got
		if r["Success"] != true || r["Body"] != "hello over s2s" || r["Type"] != "Chat" || r["FromBareJid"] != daveJID || r["ThreadID"] != "t1" || r["ParentThreadID"] != "p1" {
			t.Fatalf("WaitForMessage: %v", r)
		}
		id := r["MessageId"].(string)
		if id == "sender-id-1" || len(id) != 32 {
			t.Fatalf("message id %q is not our own", id)
		}
		m.awaitEvent(t, "list_changed")
		sendRaw(t, dave, `<message type="normal" to="`+a.jid+`"><subject>Re: lunch</subject><body>normal one</body></message>`)
		sendRaw(t, dave, `<message type="headline" to="`+a.jid+`"><body>news</body><x xmlns="jabber:x:oob"><url>https://example.org/</url></x></message>`)
		sendRaw(t, dave, `<message type="chat" to="`+a.jid+`"><composing xmlns="http://jabber.org/protocol/chatstates"/></message>`)
		var mids []string
		eventually(t, "three mid: resources", func() bool {
			res, err := m.ListResources(ctx, nil)
			mids = mids[:0]
			for _, r := range res.Resources {
				if strings.HasPrefix(r.URI, "mid:") {
					mids = append(mids, r.URI)
				}
			}
			return err == nil && len(mids) == 3
		})
		// Oldest first; a chat state alone is not queued.
		r = mustSucceed(t, m.ClientSession, "GetMessage", map[string]any{"MessageId": id})
		if r["Body"] != "hello over s2s" {
			t.Fatalf("GetMessage: %v", r)
		}
		r = mustSucceed(t, m.ClientSession, "PopMessage", nil)
		if r["MessageId"] != id {
			t.Fatalf("PopMessage: %v", r)
		}
		r = mustSucceed(t, m.ClientSession, "WaitForMessage", map[string]any{"TimeoutSeconds": 1})
		r = mustSucceed(t, m.ClientSession, "GetMessage", map[string]any{"MessageId": "mid:" + r["MessageId"].(string), "Remove": true})
		if r["Type"] != "Normal" || r["Subject"] != "Re: lunch" || r["Body"] != "normal one" {
			t.Fatalf("normal: %v", r)
		}
		res, err := m.ListResources(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		var last string
		for _, r := range res.Resources {
			if strings.HasPrefix(r.URI, "mid:") {
				last = r.URI
			}
		}
		rr, err := m.ReadResource(ctx, &mcp.ReadResourceParams{URI: last})
		if err != nil {
			t.Fatal(err)
		}
		var h account.MessageResponse
		json.Unmarshal([]byte(rr.Contents[0].Text), &h)
		if *h.Type != "Headline" || h.Body != "news" || !strings.Contains(h.ContentXml, "jabber:x:oob") {
			t.Fatalf("headline: %+v", h)
		}
		if r := mcpCall(t, m.ClientSession, "PopMessage", nil); r["Success"] != false {
			t.Fatalf("queue not empty: %v", r)
		}
		// WaitForMessage at its timeout.
		if r := mcpCall(t, m.ClientSession, "WaitForMessage", map[string]any{"TimeoutSeconds": 1}); r["Success"] != false {
			t.Fatalf("WaitForMessage on empty: %v", r)
		}
	})

	t.Run("send", func(t *testing.T) {
		mustSucceed(t, m.ClientSession, "SendChatMessage", map[string]any{"To": daveJID, "Message": "plain <text> & more"})
		el := awaitMessage(t, dave, a.jid)
		body, _ := el.Child(xmlName("jabber:client", "body"))
		if attr(el, "type") != "chat" || body.Text() != "plain <text> & more" {
			t.Fatalf("plain: %+v", el)
		}
		if _, ok := el.Child(xmlName("urn:xmpp:styling:0", "unstyled")); !ok {
			t.Error("plain text not marked unstyled")
		}
		mustSucceed(t, m.ClientSession, "SendChatMessage", map[string]any{"To": daveJID, "Message": "*bold* text", "IsMarkdown": true, "Language": "en"})
		el = awaitMessage(t, dave, a.jid)
		body, _ = el.Child(xmlName("jabber:client", "body"))
		raw, _ := wire.Marshal(el.Reader())
		if body.Text() != "*bold* text" || !regexp.MustCompile(`lang=["']en["']`).MatchString(raw) {
			t.Fatalf("markdown: %s", raw)
		}
		if _, ok := el.Child(xmlName("urn:xmpp:styling:0", "unstyled")); ok {
			t.Error("markdown marked unstyled")
		}
		// An error bounce is queued as an Error message.
		mustSucceed(t, m.ClientSession, "SendChatMessage", map[string]any{"To": "nobody-here@" + harness.RemoteDomain, "Message": "anyone?"})
		r := mustSucceed(t, m.ClientSession, "WaitForMessage", map[string]any{"TimeoutSeconds": 60})
		if r["Type"] != "Error" || r["ErrorMessage"] != true || r["ErrorMessageType"] == "None" || r["ErrorMessageText"] == "" {
			t.Fatalf("bounce: %v", r)
		}
		mustSucceed(t, m.ClientSession, "PopMessage", nil)
	})

	t.Run("roster", func(t *testing.T) {
		frank := "frank@" + harness.RemoteDomain
		frankURI := account.ContactURI(frank)
		mustSucceed(t, m.ClientSession, "AddToRoster", map[string]any{"BareJid": frank, "NickName": "Frank", "Groups": []string{"Friends", "Work"}})
		eventually(t, "frank in roster", func() bool {
			res, _ := m.ListResources(ctx, nil)
			for _, r := range res.Resources {
				if r.URI == frankURI {
					return true
				}
			}
			return false
		})
		c := readContact(t, m.ClientSession, frank)
		if c.Name != "Frank" || strings.Join(c.Groups, ",") != "Friends,Work" || c.Subscription != "none" {
			t.Fatalf("added: %+v", c)
		}
		if r := mcpCall(t, m.ClientSession, "AddToRoster", map[string]any{"BareJid": frank}); r["Success"] != false {
			t.Fatalf("second add: %v", r)
		}
		mustSucceed(t, m.ClientSession, "UpdateRosterItem", map[string]any{"BareJid": frank, "Groups": []string{"Family"}})
		eventually(t, "groups updated", func() bool {
			c := readContact(t, m.ClientSession, frank)
			return c.Name == "Frank" && strings.Join(c.Groups, ",") == "Family"
		})
		mustSucceed(t, m.ClientSession, "RemoveFromRoster", map[string]any{"BareJid": frank})
		eventually(t, "frank removed", func() bool {
			_, err := m.ReadResource(ctx, &mcp.ReadResourceParams{URI: frankURI})
			return err != nil
		})
		if r := mcpCall(t, m.ClientSession, "RemoveFromRoster", map[string]any{"BareJid": frank}); r["Success"] != false {
			t.Fatalf("second remove: %v", r)
		}
	})

	t.Run("unsubscribe", func(t *testing.T) {
		mustSucceed(t, m.ClientSession, "RequestPresenceUnsubscription", map[string]any{"To": daveJID})
		for {
			if p := awaitPresence(t, dave, a.jid, 30*time.Second); p.typ == "unsubscribe" {
				break
			}
		}
		eventually(t, "subscription from", func() bool { return readContact(t, m.ClientSession, daveJID).Subscription == "from" })
	})

	t.Run("restart keeps unread messages", func(t *testing.T) {
		sendRaw(t, dave, `<message type="chat" to="`+a.jid+`"><body>kept</body></message>`)
		mustSucceed(t, m.ClientSession, "WaitForMessage", map[string]any{"TimeoutSeconds": 60})
		m.Close()
		m2 := startMCPStdio(t, a)
		r := mustSucceed(t, m2.ClientSession, "PopMessage", nil)
		if r["Body"] != "kept" {
			t.Fatalf("after restart: %v", r)
		}
		// The roster came back from the server, and logs are on stderr.
		if c := readContact(t, m2.ClientSession, daveJID); c.Subscription != "from" {
			t.Fatalf("roster after restart: %+v", c)
		}
		if strings.Contains(m2.stderr.String(), password) {
			t.Fatal("the password is in the log")
		}
	})
}

func xmlName(space, local string) xml.Name { return xml.Name{Space: space, Local: local} }

// startMCPHTTP runs `agentgw mcp -http 127.0.0.1:0` and returns its URL,
// its log and a function that stops it (also run at cleanup).
func startMCPHTTP(t *testing.T, a *mcpAccount) (string, *syncBuf, func()) {
	t.Helper()
	return startMCPHTTPScheme(t, a, "http")
}

// startMCPHTTPScheme is startMCPHTTP for a URL scheme (https with TLS).
func startMCPHTTPScheme(t *testing.T, a *mcpAccount, scheme string) (string, *syncBuf, func()) {
	t.Helper()
	log := &syncBuf{}
	cmd := exec.Command(suite.bin, "mcp", "-config", a.config, "-http", "127.0.0.1:0")
	cmd.Stderr = log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cmd.Process.Signal(os.Interrupt)
			done := make(chan struct{})
			go func() { cmd.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				cmd.Process.Kill()
				<-done
			}
		})
	}
	t.Cleanup(stop)
	waitMCPLog(t, log, "xmpp stream up", 1)
	u := regexp.MustCompile(`url=(` + scheme + `://\S+)`).FindStringSubmatch(log.String())
	if u == nil {
		t.Fatalf("no url in the log:\n%s", log)
	}
	return u[1], log, stop
}

type bearerTransport struct{ token string }

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

func connectHTTP(t *testing.T, url, token string) *mcpSession {
	t.Helper()
	m := &mcpSession{events: make(chan string, 256)}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c := mcp.NewClient(&mcp.Implementation{Name: "integration", Version: "1"}, m.handlers())
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: bearerTransport{token}}, MaxRetries: -1}, legacySession)
	if err != nil {
		t.Fatalf("connect %s: %v", url, err)
	}
	t.Cleanup(func() { cs.Close() })
	m.ClientSession = cs
	return m
}

func TestMCPServerHTTP(t *testing.T) {
	// Dave is a stranger: accept_from "anyone" queues his messages.
	a := newMCPAccountWith(t, "", "anyone", "")
	url, log, _ := startMCPHTTP(t, a)
	ctx := context.Background()
	dave := remoteUser(t, "dave")

	full := connectHTTP(t, url, mcpFullToken)
	if v := full.InitializeResult().ProtocolVersion; v != "2025-11-25" {
		t.Errorf("negotiated %s", v)
	}
	mustSucceed(t, full.ClientSession, "SendChatMessage", map[string]any{"To": bareOf(dave), "Message": "over http"})
	if body, _ := awaitMessage(t, dave, a.jid).Child(xmlName("jabber:client", "body")); body.Text() != "over http" {
		t.Fatalf("body %q", body.Text())
	}
	sendRaw(t, dave, `<message type="chat" to="`+a.jid+`"><body>reply</body></message>`)
	r := mustSucceed(t, full.ClientSession, "WaitForMessage", map[string]any{"TimeoutSeconds": 60})
	if r["Body"] != "reply" {
		t.Fatalf("WaitForMessage: %v", r)
	}
	full.awaitEvent(t, "list_changed")

	// A Message.Send token sees one tool and cannot read resources.
	send := connectHTTP(t, url, mcpSendToken)
	list, err := send.ListTools(ctx, nil)
	if err != nil || len(list.Tools) != 1 || list.Tools[0].Name != "SendChatMessage" {
		t.Fatalf("send-only tools: %+v %v", list, err)
	}
	if _, err := send.ReadResource(ctx, &mcp.ReadResourceParams{URI: "mid:" + r["MessageId"].(string)}); err == nil || !strings.Contains(err.Error(), "Resources.Read") {
		t.Fatalf("send-only read: %v", err)
	}
	if _, err := send.CallTool(ctx, &mcp.CallToolParams{Name: "PopMessage"}); err == nil {
		t.Fatal("send-only PopMessage allowed")
	}
	mustSucceed(t, send.ClientSession, "SendChatMessage", map[string]any{"To": bareOf(dave), "Message": "from the send-only token"})
	awaitMessage(t, dave, a.jid)
	// Nothing was popped by the refused calls.
	if r := mustSucceed(t, full.ClientSession, "PopMessage", nil); r["Body"] != "reply" {
		t.Fatalf("PopMessage: %v", r)
	}

	// A wrong token: 401 with a challenge.
	req, _ := http.NewRequest("POST", url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	req.Header.Set("Authorization", "Bearer not-the-token-0000000000")
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 401 || !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer") {
		t.Fatalf("wrong token: %d %q", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
	}
	if strings.Contains(log.String(), mcpFullToken) || strings.Contains(log.String(), mcpSendToken) {
		t.Fatal("a token is in the log")
	}
}

// Plain HTTP is refused off loopback, and the file needs no [component].
func TestMCPServerHTTPNeedsTLS(t *testing.T) {
	a := newMCPAccount(t, "")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out, err := agentgw(ctx, "mcp", "-config", a.config, "-http", "0.0.0.0:0")
	if err == nil || !strings.Contains(out, "mcp.tls_cert") {
		t.Fatalf("non-loopback plain HTTP: %v %s", err, out)
	}
}

// cutProxy forwards TCP to a target until cut.
type cutProxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	conns  []net.Conn
	hold   bool // stop forwarding client → server
}

func startCutProxy(t *testing.T, target string) *cutProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{ln: ln, target: target}
	p.serve(t)
	return p
}

// serve accepts and forwards connections until the listener closes.
func (p *cutProxy) serve(t *testing.T) {
	t.Cleanup(func() { p.ln.Close(); p.cut() })
	go func() {
		for {
			c, err := p.ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", p.target)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, s)
			p.mu.Unlock()
			go func() { io.Copy(c, s); c.Close() }()
			go func() {
				buf := make([]byte, 32<<10)
				for {
					n, err := c.Read(buf)
					if err != nil {
						s.Close()
						return
					}
					p.mu.Lock()
					held := p.hold
					p.mu.Unlock()
					if held {
						continue // dropped: the server never sees it
					}
					if _, err := s.Write(buf[:n]); err != nil {
						return
					}
				}
			}()
		}
	}()
}

func (p *cutProxy) setHold(h bool) {
	p.mu.Lock()
	p.hold = h
	p.mu.Unlock()
}

func (p *cutProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

// A stream drop while a tool waits for the server: the tool fails at
// once, tools say "not connected" while down, and the account comes back.
func TestMCPServerStreamDrop(t *testing.T) {
	proxy := startCutProxy(t, suite.env.ProsodyC2S)
	a := newMCPAccount(t, proxy.ln.Addr().String())
	m := startMCPStdio(t, a)
	frank := "frank@" + harness.RemoteDomain

	proxy.setHold(true) // the roster set never reaches the server
	done := make(chan map[string]any, 1)
	go func() {
		res, err := m.CallTool(context.Background(), &mcp.CallToolParams{Name: "AddToRoster", Arguments: map[string]any{"BareJid": frank}})
		if err != nil {
			done <- map[string]any{"err": err.Error()}
			return
		}
		raw, _ := json.Marshal(res.StructuredContent)
		var out map[string]any
		json.Unmarshal(raw, &out)
		done <- out
	}()
	time.Sleep(500 * time.Millisecond) // the call is in flight either way; this only makes the cut land mid-call
	proxy.setHold(false)
	proxy.ln.Close() // no reconnect until reopened
	proxy.cut()
	r := <-done
	if r["Success"] != false || !strings.Contains(fmt.Sprint(r["Message"]), "not connected") {
		t.Fatalf("AddToRoster across a drop: %v", r)
	}
	waitMCPLog(t, m.stderr, "xmpp stream down", 1)
	if r := mcpCall(t, m.ClientSession, "SendChatMessage", map[string]any{"To": frank, "Message": "x"}); r["Success"] != false || !strings.Contains(r["Message"].(string), "not connected") {
		t.Fatalf("while down: %v", r)
	}
	// Reopen the proxy on the same port: the account logs in again.
	ln, err := net.Listen("tcp", proxy.ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	(&cutProxy{ln: ln, target: suite.env.ProsodyC2S}).serve(t)
	waitMCPLog(t, m.stderr, "xmpp stream up", 2)
	mustSucceed(t, m.ClientSession, "AddToRoster", map[string]any{"BareJid": frank})
}
