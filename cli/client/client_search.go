package client

import (
	"context"
	"flag"
	"fmt"
	"text/tabwriter"

	"agentgw/agentclient"
	"agentgw/cli/cmdline"

	"mellium.im/xmpp/jid"
)

// searchListing is what search prints.
type searchListing struct {
	Gateway string          `json:"gateway"`
	Count   int             `json:"count"`
	Items   []endpointEntry `json:"items"`
}

func parseSearch(args []string) (clientRun, error) {
	fs := flag.NewFlagSet("client search", flag.ContinueOnError)
	gateway := fs.String("gateway", "", "the gateway JID (default: the first agent gateway on the account's server)")
	pos, err := cmdline.Parse(fs, args, 0, 1)
	if err != nil {
		return nil, err
	}
	text := ""
	if len(pos) == 1 {
		text = pos[0]
	}
	return func(ctx context.Context, cmd *clientCmd, user jid.JID) error {
		gw := *gateway
		if gw == "" {
			var err error
			if gw, err = cmd.findGateway(ctx, user.Domainpart()); err != nil {
				return err
			}
		}
		return cmd.search(ctx, gw, text)
	}, nil
}

// findGateway returns the first service of the account's server that
// advertises the agent directory and XEP-0055 search.
func (cmd *clientCmd) findGateway(ctx context.Context, domain string) (string, error) {
	gws, err := cmd.ac.Gateways(ctx, domain)
	if err != nil {
		return "", err
	}
	for _, g := range gws {
		if g.Search {
			return g.JID, nil
		}
	}
	return "", fmt.Errorf("no agent gateway with search on %s (name one: search -gateway JID [TEXT])", domain)
}

// search submits the XEP-0055 form with nick = text (empty: every visible
// endpoint) and reads the result pages to the end.
func (cmd *clientCmd) search(ctx context.Context, gateway, text string) error {
	out := searchListing{Gateway: gateway, Items: []endpointEntry{}}
	items, count, err := cmd.ac.Search(ctx, gateway, text)
	if err != nil {
		return err
	}
	out.Count = count
	for _, it := range items {
		out.Items = append(out.Items, endpointEntry{JID: it.JID, Name: it.Nick})
	}
	if cmd.json {
		return cmd.emit(out)
	}
	noun := "endpoints match"
	if out.Count == 1 {
		noun = "endpoint matches"
	}
	cmd.printf("%d %s at %s\n", out.Count, noun, gateway)
	tw := tabwriter.NewWriter(cmd.stdout, 0, 4, 2, ' ', 0)
	for _, it := range out.Items {
		fmt.Fprintf(tw, "  %s\t%s\n", agentclient.SafeText(it.JID, 200), agentclient.SafeText(it.Name, 100))
	}
	return tw.Flush()
}
