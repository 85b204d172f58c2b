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
	"time"

	"agentgw/client"
	"agentgw/directory"
	"agentgw/wire"

	"mellium.im/xmpp/jid"
)

// clientTimeout bounds each client command.
const clientTimeout = 30 * time.Second

// clientCmd is `agentgw client`: an XMPP C2S account speaking the protocol
// as the client guide describes it.
type clientCmd struct {
	c      *client.Client
	stdout io.Writer
	json   bool
}

func runClient(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("client", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	user := fs.String("jid", "", "the account to log in as (bare JID)")
	pwFile := fs.String("password-file", "", "file whose first line is the password (default: $AGENTGW_PASSWORD)")
	server := fs.String("server", "", "host:port of the account's server (default: the JID's domain, port 5222)")
	asJSON := fs.Bool("json", false, "machine-readable output")
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("%w: client: %v", errUsage, err)
	}
	rest := fs.Args()
	if *user == "" || len(rest) == 0 {
		return fmt.Errorf("%w: client -jid JID [-password-file F] [-server HOST:PORT] [-json] discover|describe JID", errUsage)
	}
	j, err := jid.Parse(*user)
	if err != nil || j.Localpart() == "" {
		return fmt.Errorf("client: -jid %q is not an account JID", *user)
	}
	password, err := readPassword(*pwFile)
	if err != nil {
		return err
	}
	addr := *server
	if addr == "" {
		addr = net.JoinHostPort(j.Domainpart(), "5222")
	}
	ctx, cancel := context.WithTimeout(ctx, clientTimeout)
	defer cancel()
	c, err := client.Dial(ctx, addr, j, password)
	if err != nil {
		return fmt.Errorf("client: %w", err)
	}
	defer c.Close()
	cmd := &clientCmd{c: c, stdout: stdout, json: *asJSON}
	switch rest[0] {
	case "discover":
		if len(rest) != 1 {
			return fmt.Errorf("%w: client discover takes no arguments", errUsage)
		}
		return cmd.discover(ctx, j.Domainpart())
	case "describe":
		if len(rest) != 2 {
			return fmt.Errorf("%w: client describe JID", errUsage)
		}
		return cmd.describe(ctx, rest[1])
	}
	return fmt.Errorf("%w: unknown client command %q", errUsage, rest[0])
}

// readPassword takes the password from a file or from AGENTGW_PASSWORD;
// never from the command line, where other users could read it.
func readPassword(file string) (string, error) {
	if file != "" {
		b, err := os.ReadFile(file)
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
	raw, err := cmd.c.IQ(ctx, "get", to, payload)
	if err != nil {
		return wire.Element{}, err
	}
	el, err := wire.Parse(raw)
	if err != nil {
		return wire.Element{}, err
	}
	if typ, _ := el.AttrValue("type"); typ == "error" {
		cond := "undefined-condition"
		for _, c := range el.Children() {
			if c.Start.Name.Local == "error" && len(c.Children()) > 0 {
				cond = c.Children()[0].Start.Name.Local
			}
		}
		return wire.Element{}, fmt.Errorf("%s answered %s", to, cond)
	}
	kids := el.Children()
	if len(kids) == 0 {
		return wire.Element{}, nil
	}
	return kids[0], nil
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
// from a name), then the directory, paged to the end.
func (cmd *clientCmd) discover(ctx context.Context, domain string) error {
	items, err := cmd.query(ctx, domain, `<query xmlns='http://jabber.org/protocol/disco#items'/>`)
	if err != nil {
		return err
	}
	var out []gatewayListing
	for _, it := range items.Children() {
		cand, _ := it.AttrValue("jid")
		info, err := cmd.query(ctx, cand, `<query xmlns='http://jabber.org/protocol/disco#info'/>`)
		if err != nil || !hasFeature(info, directory.NS) {
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
		return json.NewEncoder(cmd.stdout).Encode(out)
	}
	if len(out) == 0 {
		fmt.Fprintf(cmd.stdout, "no agent gateway found on %s\n", domain)
		return nil
	}
	for _, gl := range out {
		fmt.Fprintf(cmd.stdout, "gateway %s (%s): %d visible endpoints\n", gl.Gateway, gl.Name, gl.Count)
		tw := tabwriter.NewWriter(cmd.stdout, 0, 4, 2, ' ', 0)
		for _, e := range gl.Endpoints {
			fmt.Fprintf(tw, "  %s\t%s\n", e.JID, e.Name)
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
	d := endpointDescription{JID: endpoint, Name: identityName(info), Info: map[string]string{}}
	for _, c := range info.Children() {
		switch c.Start.Name.Local {
		case "feature":
			v, _ := c.AttrValue("var")
			d.Features = append(d.Features, v)
		case "x":
			for _, f := range c.Children() {
				v, _ := f.AttrValue("var")
				if val, ok := f.Child(xml.Name{Space: wire.NSData, Local: "value"}); ok && v != "FORM_TYPE" {
					d.Info[v] = val.Text()
				}
			}
		}
	}
	if !hasFeature(info, directory.NSEndpoint) {
		return fmt.Errorf("%s is not an agent endpoint", endpoint)
	}
	if cmd.json {
		return json.NewEncoder(cmd.stdout).Encode(d)
	}
	fmt.Fprintf(cmd.stdout, "endpoint %s (%s)\n", d.JID, d.Name)
	for _, k := range []string{"server_name", "server_title", "description", "version", "manifest_hash_algo", "manifest_hash_value", "cold_start_supported", "request_replay_seconds"} {
		if v, ok := d.Info[k]; ok {
			fmt.Fprintf(cmd.stdout, "  %-22s %s\n", k, v)
		}
	}
	fmt.Fprintln(cmd.stdout, "  features:")
	for _, f := range d.Features {
		fmt.Fprintf(cmd.stdout, "    %s\n", f)
	}
	return nil
}

func hasFeature(info wire.Element, feature string) bool {
	for _, c := range info.Children() {
		if v, _ := c.AttrValue("var"); c.Start.Name.Local == "feature" && v == feature {
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
