package cli

import (
	"context"
	"flag"
	"fmt"
	"text/tabwriter"

	"agentgw/directory"
	"agentgw/search"
	"agentgw/wire"

	"mellium.im/xmpp/jid"
)

// searchPageSize is the RSM page size search asks for; the gateway may cap
// it lower.
const searchPageSize = 50

// maxSearchPages bounds the pages one search reads.
const maxSearchPages = 1000

// searchListing is what search prints.
type searchListing struct {
	Gateway string          `json:"gateway"`
	Count   int             `json:"count"`
	Items   []endpointEntry `json:"items"`
}

func parseSearch(args []string) (clientRun, error) {
	fs := flag.NewFlagSet("client search", flag.ContinueOnError)
	gateway := fs.String("gateway", "", "the gateway JID (default: the first agent gateway on the account's server)")
	pos, err := parse(fs, args, 0, 1)
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
	items, err := cmd.query(ctx, domain, `<query xmlns='http://jabber.org/protocol/disco#items'/>`)
	if err != nil {
		return "", err
	}
	for _, it := range items.Children() {
		cand, ok := it.AttrValue("jid")
		if !ok {
			continue
		}
		info, err := cmd.query(ctx, cand, `<query xmlns='http://jabber.org/protocol/disco#info'/>`)
		if err == nil && hasFeature(info, directory.NS) && hasFeature(info, search.NS) {
			return cand, nil
		}
	}
	return "", fmt.Errorf("no agent gateway with search on %s (name one with -gateway)", domain)
}

// search submits the XEP-0055 form with nick = text (empty: every visible
// endpoint) and reads the result pages to the end.
func (cmd *clientCmd) search(ctx context.Context, gateway, text string) error {
	out := searchListing{Gateway: gateway, Items: []endpointEntry{}}
	var after *string
	for page := 0; page < maxSearchPages; page++ {
		max := searchPageSize
		req := search.Request{Nick: text, RSM: &wire.RSMRequest{Max: &max, After: after}}
		payload, err := wire.Marshal(req.TokenReader())
		if err != nil {
			return err
		}
		q, err := cmd.s.iq(ctx, iqTimeout, "set", gateway, payload)
		if err != nil {
			return err
		}
		res, err := search.ParseResult(q)
		if err != nil {
			return fmt.Errorf("search result from %s: %w", gateway, err)
		}
		for _, it := range res.Items {
			out.Items = append(out.Items, endpointEntry{JID: it.JID, Name: it.Nick})
		}
		if res.Set == nil || len(res.Items) == 0 {
			out.Count = len(out.Items)
			break
		}
		out.Count = res.Set.Count
		if len(out.Items) >= out.Count {
			break
		}
		last := res.Set.Last
		after = &last
	}
	if cmd.json {
		return cmd.emit(out)
	}
	cmd.printf("%d endpoints match at %s\n", out.Count, gateway)
	tw := tabwriter.NewWriter(cmd.stdout, 0, 4, 2, ' ', 0)
	for _, it := range out.Items {
		fmt.Fprintf(tw, "  %s\t%s\n", safeText(it.JID, 200), safeText(it.Name, 100))
	}
	return tw.Flush()
}
