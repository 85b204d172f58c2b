package client

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"text/tabwriter"

	"agentgw/agentclient"
	"agentgw/c2s"
	"agentgw/cli/cmdline"
	"agentgw/directory"

	"mellium.im/xmpp/jid"
)

// clientUsage is the synopsis of `agentgw client`, repeated in the usage
// text of package cli. docs/tasks.md describes every command.
const clientUsage = "client -jid JID [-password-file F] [-server HOST:PORT] [-json] [-trace FILE] " +
	"discover [GATEWAY] | search [-gateway JID] [TEXT] | describe ENDPOINT | tools ENDPOINT | " +
	"call [flags] ENDPOINT TOOL JSON | chat ENDPOINT TEXT | state ENDPOINT TASK-ID | result ENDPOINT TASK-ID | " +
	"cancel [flags] ENDPOINT TASK-ID | input [flags] ENDPOINT TASK-ID REQUEST-ID JSON"

// clientCmd is `agentgw client`: an XMPP C2S account speaking the protocol
// as the client guide describes it.
type clientCmd struct {
	s *session
	// ac speaks the protocol over s.
	ac     *agentclient.Client
	stdout io.Writer
	// stderr receives the diagnostics of ignored protocol messages.
	stderr io.Writer
	json   bool
	// stdin and interactive: call prompts for input on a terminal.
	stdin       io.Reader
	interactive bool
	// hint is the command prefix printed in suggestions, such as
	// "demo/agentgw client -jid alice@home.example -password-file alice.pw":
	// the binary as it was invoked and the flags this command logged in
	// with, so that it can be pasted (clientHint).
	hint string
	// hintNote, if set, says what the hint needs besides: the password
	// in $AGENTGW_PASSWORD, which is never printed.
	hintNote string
}

// clientIO is what a client command reads and writes besides XMPP.
type clientIO struct {
	stdout      io.Writer
	stderr      io.Writer
	stdin       io.Reader
	interactive bool
	// dial replaces the login built from the flags (tests).
	dial dialFunc
	// self is the binary as invoked (os.Args[0]), for the commands the
	// client prints; "" is "agentgw".
	self string
}

func Run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	interactive := cmdline.IsTerminal(os.Stdin) && cmdline.IsTerminal(os.Stdout)
	return runClientIO(ctx, args, clientIO{stdout: stdout, stderr: stderr, stdin: os.Stdin, interactive: interactive, self: os.Args[0]})
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
		return fmt.Errorf("%w: client: %v", cmdline.ErrUsage, err)
	}
	rest := fs.Args()
	if *user == "" || len(rest) == 0 {
		return fmt.Errorf("%w: %s", cmdline.ErrUsage, clientUsage)
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
		password, err := cmdline.ReadPassword(*pwFile)
		if err != nil {
			return err
		}
		addr := *server
		if addr == "" {
			addr = net.JoinHostPort(j.Domainpart(), "5222")
		}
		dial = func(ctx context.Context) (conn, error) {
			c, err := c2s.Dial(ctx, addr, j, password)
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
	lctx, cancel := context.WithTimeout(ctx, cmdline.LoginTimeout)
	s.c, err = dial(lctx)
	cancel()
	if err != nil {
		return fmt.Errorf("client: %w", err)
	}
	defer func() { s.c.Close() }()
	hint, note := clientHint(cio.self, j, *server, *pwFile)
	cmd := &clientCmd{s: s, stdout: cio.stdout, stderr: cio.stderr, json: *asJSON, stdin: cio.stdin, interactive: cio.interactive && !*asJSON,
		hint: hint, hintNote: note}
	cmd.ac = &agentclient.Client{Conn: s, Notice: cmd.notice}
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
			return nil, fmt.Errorf("%w: client discover [GATEWAY]", cmdline.ErrUsage)
		}
		return func(ctx context.Context, cmd *clientCmd, user jid.JID) error {
			if len(rest) == 1 {
				return cmd.discover(ctx, rest[0], true)
			}
			return cmd.discover(ctx, user.Domainpart(), false)
		}, nil
	case "describe":
		if len(rest) != 1 {
			return nil, fmt.Errorf("%w: client describe ENDPOINT", cmdline.ErrUsage)
		}
		return func(ctx context.Context, cmd *clientCmd, _ jid.JID) error { return cmd.describe(ctx, rest[0]) }, nil
	case "search":
		return parseSearch(rest)
	case "tools":
		if len(rest) != 1 {
			return nil, fmt.Errorf("%w: client tools ENDPOINT", cmdline.ErrUsage)
		}
		return func(ctx context.Context, cmd *clientCmd, _ jid.JID) error { return cmd.tools(ctx, rest[0]) }, nil
	case "call":
		return parseCall(rest)
	case "chat":
		return parseChat(rest)
	case "state", "result":
		if len(rest) != 2 {
			return nil, fmt.Errorf("%w: client %s ENDPOINT TASK-ID", cmdline.ErrUsage, name)
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
	return nil, fmt.Errorf("%w: unknown client command %q", cmdline.ErrUsage, name)
}

// endpointArg checks an endpoint argument: a bare JID with a localpart.
// A bad one is a usage error whose message says it all (cmdline.ErrBadArg): the
// usage text would bury it.
func endpointArg(s string) (jid.JID, error) {
	j, err := jid.Parse(s)
	if err != nil || j.Localpart() == "" || j.Resourcepart() != "" {
		return jid.JID{}, fmt.Errorf("%w: client: %q is not an endpoint (a bare JID such as demo@agents.example)", cmdline.ErrBadArg, s)
	}
	return j, nil
}

// clientHint is the command prefix the client prints in suggestions (the
// input command of a pending request, state, …), as one pastes it: self,
// the binary as invoked, and the flags this command logged in with. The
// password is never in it: it names the password file, or, for a password
// from $AGENTGW_PASSWORD, note says that the variable must be set.
func clientHint(self string, account jid.JID, server, pwFile string) (hint, note string) {
	if self == "" {
		self = "agentgw"
	}
	args := []string{self, "client", "-jid", account.Bare().String()}
	if server != "" {
		args = append(args, "-server", server)
	}
	if pwFile != "" {
		args = append(args, "-password-file", pwFile)
	} else {
		note = "with AGENTGW_PASSWORD set, as for this command"
	}
	for i, a := range args {
		args[i] = shellQuote(a)
	}
	return strings.Join(args, " "), note
}

// shellQuote quotes s for a POSIX shell where it needs it.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("@%+=:,./_-", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
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
	var candidates []agentclient.Gateway
	if direct {
		info, err := cmd.ac.Info(ctx, target, "")
		if err != nil {
			return err
		}
		if info.HasFeature(directory.NS) {
			candidates = []agentclient.Gateway{{JID: target, Name: info.Name()}}
		}
	} else {
		var err error
		if candidates, err = cmd.ac.Gateways(ctx, target); err != nil {
			return err
		}
	}
	var out []gatewayListing
	for _, cand := range candidates {
		gl := gatewayListing{Gateway: cand.JID, Name: cand.Name}
		items, count, err := cmd.ac.Directory(ctx, cand.JID)
		if err != nil {
			return err
		}
		gl.Count = count
		for _, it := range items {
			gl.Endpoints = append(gl.Endpoints, endpointEntry{JID: it.JID, Name: it.Name})
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
		noun := "visible endpoints"
		if gl.Count == 1 {
			noun = "visible endpoint"
		}
		cmd.printf("gateway %s (%s): %d %s\n", gl.Gateway, agentclient.SafeText(gl.Name, 100), gl.Count, noun)
		tw := tabwriter.NewWriter(cmd.stdout, 0, 4, 2, ' ', 0)
		for _, e := range gl.Endpoints {
			fmt.Fprintf(tw, "  %s\t%s\n", e.JID, agentclient.SafeText(e.Name, 100))
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
	info, err := cmd.ac.Info(ctx, endpoint, "")
	if err != nil {
		return err
	}
	d := endpointDescription{JID: endpoint, Name: info.Name(), Features: info.Features, Info: info.Values()}
	if !info.HasFeature(directory.NSEndpoint) {
		return fmt.Errorf("%s is not an agent endpoint", endpoint)
	}
	if cmd.json {
		return cmd.emit(d)
	}
	cmd.printf("endpoint %s (%s)\n", d.JID, agentclient.SafeText(d.Name, 100))
	for _, k := range []string{"server_name", "server_title", "description", "version", "manifest_hash_algo", "manifest_hash_value", "cold_start_supported", "request_replay_seconds"} {
		if v, ok := d.Info[k]; ok {
			cmd.printf("  %-22s %s\n", k, agentclient.SafeText(v, 400))
		}
	}
	cmd.printf("  features:\n")
	for _, f := range d.Features {
		cmd.printf("    %s\n", agentclient.SafeText(f, 200))
	}
	return nil
}
