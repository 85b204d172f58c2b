package cli

import (
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"text/tabwriter"

	"agentgw/client"
	"agentgw/directory"
	"agentgw/internal/secretfile"
	"agentgw/wire"

	"mellium.im/xmpp/jid"
)

// clientUsage is the synopsis of `agentgw client`, repeated in the usage
// text of package cli. docs/tasks.md describes every command.
const clientUsage = "client -jid JID [-password-file F] [-server HOST:PORT] [-json] [-trace FILE] " +
	"discover [GATEWAY] | search [-gateway JID] [TEXT] | describe ENDPOINT | tools ENDPOINT | " +
	"call [flags] ENDPOINT TOOL JSON | state ENDPOINT TASK-ID | result ENDPOINT TASK-ID | " +
	"cancel [flags] ENDPOINT TASK-ID | input [flags] ENDPOINT TASK-ID REQUEST-ID JSON"

// clientCmd is `agentgw client`: an XMPP C2S account speaking the protocol
// as the client guide describes it.
type clientCmd struct {
	s      *session
	stdout io.Writer
	// stderr receives the diagnostics of ignored protocol messages.
	stderr io.Writer
	json   bool
	// stdin and interactive: call prompts for input on a terminal.
	stdin       io.Reader
	interactive bool
	// hint is the command prefix printed in suggestions, such as
	// "agentgw client -jid alice@home.example".
	hint string
}

// clientIO is what a client command reads and writes besides XMPP.
type clientIO struct {
	stdout      io.Writer
	stderr      io.Writer
	stdin       io.Reader
	interactive bool
	// dial replaces the login built from the flags (tests).
	dial dialFunc
}

func runClient(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	interactive := isTerminal(os.Stdin) && isTerminal(os.Stdout)
	return runClientIO(ctx, args, clientIO{stdout: stdout, stderr: stderr, stdin: os.Stdin, interactive: interactive})
}

// isTerminal reports whether f looks like a terminal: a character device
// other than the null device (what a detached or scripted run has).
func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	if err != nil || st.Mode()&os.ModeCharDevice == 0 {
		return false
	}
	null, err := os.Stat(os.DevNull)
	return err != nil || !os.SameFile(st, null)
}

func runClientIO(ctx context.Context, args []string, cio clientIO) error {
	fs := flag.NewFlagSet("client", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	user := fs.String("jid", "", "the account to log in as (bare JID)")
	pwFile := fs.String("password-file", "", "file whose first line is the password (default: $AGENTGW_PASSWORD)")
	server := fs.String("server", "", "host:port of the account's server (default: the JID's domain, port 5222)")
	asJSON := fs.Bool("json", false, "machine-readable output: one JSON object per line")
	traceFile := fs.String("trace", "", "append every stanza received to FILE, one JSON object per line (debugging)")
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("%w: client: %v", errUsage, err)
	}
	rest := fs.Args()
	if *user == "" || len(rest) == 0 {
		return fmt.Errorf("%w: %s", errUsage, clientUsage)
	}
	j, err := jid.Parse(*user)
	if err != nil || j.Localpart() == "" {
		return fmt.Errorf("client: -jid %q is not an account JID", *user)
	}
	run, err := clientCommand(rest)
	if err != nil {
		return err
	}
	dial := cio.dial
	if dial == nil {
		password, err := readPassword(*pwFile)
		if err != nil {
			return err
		}
		addr := *server
		if addr == "" {
			addr = net.JoinHostPort(j.Domainpart(), "5222")
		}
		dial = func(ctx context.Context) (conn, error) {
			c, err := client.Dial(ctx, addr, j, password)
			if err != nil {
				return nil, err
			}
			return c, nil
		}
	}
	s := &session{dial: dial}
	if *traceFile != "" {
		f, err := os.OpenFile(*traceFile, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
		if err != nil {
			return fmt.Errorf("client: trace: %w", err)
		}
		defer f.Close()
		s.trace = f
	}
	lctx, cancel := context.WithTimeout(ctx, loginTimeout)
	s.c, err = dial(lctx)
	cancel()
	if err != nil {
		return fmt.Errorf("client: %w", err)
	}
	defer func() { s.c.Close() }()
	hint := "agentgw client -jid " + j.Bare().String()
	if *server != "" {
		hint += " -server " + *server
	}
	cmd := &clientCmd{s: s, stdout: cio.stdout, stderr: cio.stderr, json: *asJSON, stdin: cio.stdin, interactive: cio.interactive && !*asJSON, hint: hint}
	return run(ctx, cmd, j)
}

// clientRun runs one subcommand on a logged-in session.
type clientRun func(ctx context.Context, cmd *clientCmd, user jid.JID) error

// clientCommand parses a subcommand and its arguments before logging in,
// so that usage errors cost no connection.
func clientCommand(args []string) (clientRun, error) {
	name, rest := args[0], args[1:]
	switch name {
	case "discover":
		if len(rest) > 1 {
			return nil, fmt.Errorf("%w: client discover [GATEWAY]", errUsage)
		}
		return func(ctx context.Context, cmd *clientCmd, user jid.JID) error {
			if len(rest) == 1 {
				return cmd.discover(ctx, rest[0], true)
			}
			return cmd.discover(ctx, user.Domainpart(), false)
		}, nil
	case "describe":
		if len(rest) != 1 {
			return nil, fmt.Errorf("%w: client describe ENDPOINT", errUsage)
		}
		return func(ctx context.Context, cmd *clientCmd, _ jid.JID) error { return cmd.describe(ctx, rest[0]) }, nil
	case "search":
		return parseSearch(rest)
	case "tools":
		if len(rest) != 1 {
			return nil, fmt.Errorf("%w: client tools ENDPOINT", errUsage)
		}
		return func(ctx context.Context, cmd *clientCmd, _ jid.JID) error { return cmd.tools(ctx, rest[0]) }, nil
	case "call":
		return parseCall(rest)
	case "state", "result":
		if len(rest) != 2 {
			return nil, fmt.Errorf("%w: client %s ENDPOINT TASK-ID", errUsage, name)
		}
		ep, err := endpointArg(rest[0])
		if err != nil {
			return nil, err
		}
		if name == "state" {
			return func(ctx context.Context, cmd *clientCmd, _ jid.JID) error { return cmd.stateCmd(ctx, ep, rest[1]) }, nil
		}
		return func(ctx context.Context, cmd *clientCmd, _ jid.JID) error { return cmd.resultCmd(ctx, ep, rest[1]) }, nil
	case "cancel":
		return parseCancel(rest)
	case "input":
		return parseInput(rest)
	}
	return nil, fmt.Errorf("%w: unknown client command %q", errUsage, name)
}

// endpointArg checks an endpoint argument: a bare JID with a localpart.
func endpointArg(s string) (jid.JID, error) {
	j, err := jid.Parse(s)
	if err != nil || j.Localpart() == "" || j.Resourcepart() != "" {
		return jid.JID{}, fmt.Errorf("%w: client: %q is not an endpoint (a bare JID such as demo@agents.example)", errUsage, s)
	}
	return j, nil
}

// readPassword takes the password from a file or from AGENTGW_PASSWORD;
// never from the command line, where other users could read it.
func readPassword(file string) (string, error) {
	if file != "" {
		// A password file that group or others can read is refused.
		b, err := secretfile.Read(file, 4096)
		if err != nil {
			return "", fmt.Errorf("client: password file: %w", err)
		}
		pw, _, _ := strings.Cut(string(b), "\n")
		return strings.TrimRight(pw, "\r"), nil
	}
	if pw := os.Getenv("AGENTGW_PASSWORD"); pw != "" {
		return pw, nil
	}
	return "", errors.New("client: no password: use -password-file or set AGENTGW_PASSWORD")
}

// query sends an IQ get and returns the result's payload, or an error that
// names the stanza error condition.
func (cmd *clientCmd) query(ctx context.Context, to, payload string) (wire.Element, error) {
	return cmd.s.get(ctx, to, payload)
}

// emit writes one JSON object on its own line (-json output).
func (cmd *clientCmd) emit(v any) error {
	return json.NewEncoder(cmd.stdout).Encode(v)
}

// printf writes human-readable output.
func (cmd *clientCmd) printf(format string, args ...any) {
	fmt.Fprintf(cmd.stdout, format, args...)
}

// gatewayListing is what discover prints for each gateway.
type gatewayListing struct {
	Gateway   string          `json:"gateway"`
	Name      string          `json:"name,omitempty"`
	Count     int             `json:"count"`
	Endpoints []endpointEntry `json:"endpoints"`
}

type endpointEntry struct {
	JID  string `json:"jid"`
	Name string `json:"name,omitempty"`
}

// discover follows the client guide: the server's disco#items, then each
// candidate's disco#info checked for the directory feature (never inferred
// from a name), then the directory, paged to the end. With direct set,
// target is itself the only candidate: a known, possibly remote, gateway.
func (cmd *clientCmd) discover(ctx context.Context, target string, direct bool) error {
	candidates := []string{target}
	if !direct {
		items, err := cmd.query(ctx, target, `<query xmlns='http://jabber.org/protocol/disco#items'/>`)
		if err != nil {
			return err
		}
		candidates = nil
		for _, it := range items.Children() {
			if j, ok := it.AttrValue("jid"); ok {
				candidates = append(candidates, j)
			}
		}
	}
	var out []gatewayListing
	for _, cand := range candidates {
		info, err := cmd.query(ctx, cand, `<query xmlns='http://jabber.org/protocol/disco#info'/>`)
		if err != nil || !hasFeature(info, directory.NS) {
			if direct && err != nil {
				return err
			}
			continue
		}
		gl := gatewayListing{Gateway: cand, Name: identityName(info)}
		after := ""
		for {
			set := "<max>100</max>"
			if after != "" {
				set += "<after>" + xmlEscape(after) + "</after>"
			}
			page, err := cmd.query(ctx, cand, `<query xmlns='http://jabber.org/protocol/disco#items' node='`+directory.NS+`'><set xmlns='http://jabber.org/protocol/rsm'>`+set+`</set></query>`)
			if err != nil {
				return err
			}
			n := 0
			for _, c := range page.Children() {
				switch c.Start.Name.Local {
				case "item":
					j, _ := c.AttrValue("jid")
					name, _ := c.AttrValue("name")
					gl.Endpoints = append(gl.Endpoints, endpointEntry{JID: j, Name: name})
					after = j
					n++
				case "set":
					if cnt, ok := c.Child(xml.Name{Space: wire.NSRSM, Local: "count"}); ok {
						fmt.Sscan(cnt.Text(), &gl.Count)
					}
				}
			}
			if n == 0 || len(gl.Endpoints) >= gl.Count {
				break
			}
		}
		out = append(out, gl)
	}
	if cmd.json {
		return cmd.emit(out)
	}
	if len(out) == 0 {
		cmd.printf("no agent gateway found on %s\n", target)
		return nil
	}
	for _, gl := range out {
		cmd.printf("gateway %s (%s): %d visible endpoints\n", gl.Gateway, safeText(gl.Name, 100), gl.Count)
		tw := tabwriter.NewWriter(cmd.stdout, 0, 4, 2, ' ', 0)
		for _, e := range gl.Endpoints {
			fmt.Fprintf(tw, "  %s\t%s\n", e.JID, safeText(e.Name, 100))
		}
		tw.Flush()
	}
	return nil
}

// endpointDescription is what describe prints.
type endpointDescription struct {
	JID      string            `json:"jid"`
	Name     string            `json:"name,omitempty"`
	Features []string          `json:"features"`
	Info     map[string]string `json:"info"`
}

func (cmd *clientCmd) describe(ctx context.Context, endpoint string) error {
	info, err := cmd.query(ctx, endpoint, `<query xmlns='http://jabber.org/protocol/disco#info'/>`)
	if err != nil {
		return err
	}
	d := endpointDescription{JID: endpoint, Name: identityName(info), Features: features(info), Info: formValues(info)}
	if !hasFeature(info, directory.NSEndpoint) {
		return fmt.Errorf("%s is not an agent endpoint", endpoint)
	}
	if cmd.json {
		return cmd.emit(d)
	}
	cmd.printf("endpoint %s (%s)\n", d.JID, safeText(d.Name, 100))
	for _, k := range []string{"server_name", "server_title", "description", "version", "manifest_hash_algo", "manifest_hash_value", "cold_start_supported", "request_replay_seconds"} {
		if v, ok := d.Info[k]; ok {
			cmd.printf("  %-22s %s\n", k, safeText(v, 400))
		}
	}
	cmd.printf("  features:\n")
	for _, f := range d.Features {
		cmd.printf("    %s\n", safeText(f, 200))
	}
	return nil
}

// features lists the feature vars of a disco#info result.
func features(info wire.Element) []string {
	var out []string
	for _, c := range info.Children() {
		if v, ok := c.AttrValue("var"); ok && c.Start.Name.Local == "feature" {
			out = append(out, v)
		}
	}
	return out
}

// formValues returns the first value of each field of the XEP-0128 forms
// of a disco#info result, FORM_TYPE excepted.
func formValues(info wire.Element) map[string]string {
	out := map[string]string{}
	for _, c := range info.Children() {
		if c.Start.Name != (xml.Name{Space: wire.NSData, Local: "x"}) {
			continue
		}
		for _, f := range c.Children() {
			v, _ := f.AttrValue("var")
			if val, ok := f.Child(xml.Name{Space: wire.NSData, Local: "value"}); ok && v != "FORM_TYPE" {
				out[v] = val.Text()
			}
		}
	}
	return out
}

func hasFeature(info wire.Element, feature string) bool {
	for _, c := range info.Children() {
		if v, _ := c.AttrValue("var"); c.Start.Name.Local == "feature" && v == feature {
			return true
		}
	}
	return false
}

// hasIdentity reports whether a disco#info result has the identity
// category/type.
func hasIdentity(info wire.Element, category, typ string) bool {
	for _, c := range info.Children() {
		if c.Start.Name.Local != "identity" {
			continue
		}
		cat, _ := c.AttrValue("category")
		t, _ := c.AttrValue("type")
		if cat == category && t == typ {
			return true
		}
	}
	return false
}

func identityName(info wire.Element) string {
	for _, c := range info.Children() {
		if c.Start.Name.Local == "identity" {
			n, _ := c.AttrValue("name")
			return n
		}
	}
	return ""
}

func xmlEscape(s string) string {
	var b strings.Builder
	xml.EscapeText(&b, []byte(s))
	return b.String()
}
