package agentclient

import (
	"context"
	"fmt"

	"agentgw/directory"
	"agentgw/search"
	"agentgw/wire"
)

// Paging bounds.
const (
	// DirectoryPageSize and SearchPageSize are the RSM page sizes asked
	// for; the gateway may cap them lower.
	DirectoryPageSize = 100
	SearchPageSize    = 50
	// maxPages bounds the pages read by one listing.
	maxPages = 1000
)

// Info asks to for its disco#info at node (XEP-0030).
func (c *Client) Info(ctx context.Context, to, node string) (wire.InfoResult, error) {
	el, err := c.get(ctx, to, wire.InfoRequest{Node: node}.TokenReader())
	if err != nil {
		return wire.InfoResult{}, err
	}
	r, err := wire.ParseInfoResult(el)
	if err != nil {
		return r, fmt.Errorf("disco#info from %s: %w", to, err)
	}
	return r, nil
}

// Items asks to for its disco#items at node, one page when rsm is set.
func (c *Client) Items(ctx context.Context, to, node string, rsm *wire.RSMRequest) (wire.ItemsResult, error) {
	el, err := c.get(ctx, to, wire.ItemsRequest{Node: node, RSM: rsm}.TokenReader())
	if err != nil {
		return wire.ItemsResult{}, err
	}
	r, err := wire.ParseItemsResult(el)
	if err != nil {
		return r, fmt.Errorf("disco#items from %s: %w", to, err)
	}
	return r, nil
}

// Gateway is an agent gateway found on a server.
type Gateway struct {
	JID  string
	Name string
	// Search is true when it also advertises XEP-0055.
	Search bool
}

// Gateways follows the client guide's discovery: the server's
// disco#items, then each candidate's disco#info checked for the directory
// feature (never inferred from a name).
func (c *Client) Gateways(ctx context.Context, domain string) ([]Gateway, error) {
	items, err := c.Items(ctx, domain, "", nil)
	if err != nil {
		return nil, err
	}
	var out []Gateway
	for _, it := range items.Items {
		if it.JID == "" {
			continue
		}
		info, err := c.Info(ctx, it.JID, "")
		if err != nil || !info.HasFeature(directory.NS) {
			continue
		}
		out = append(out, Gateway{JID: it.JID, Name: info.Name(), Search: info.HasFeature(search.NS)})
	}
	return out, nil
}

// DirectoryPage reads one page of a gateway's directory of visible
// endpoints, after the RSM item id after ("" for the first page).
func (c *Client) DirectoryPage(ctx context.Context, gateway, after string, max int) (wire.ItemsResult, error) {
	rsm := &wire.RSMRequest{Max: &max}
	if after != "" {
		rsm.After = &after
	}
	return c.Items(ctx, gateway, directory.NS, rsm)
}

// Directory reads a gateway's whole directory: the endpoints and the
// count the gateway reports.
func (c *Client) Directory(ctx context.Context, gateway string) ([]wire.Item, int, error) {
	var all []wire.Item
	count, after := 0, ""
	for page := 0; page < maxPages; page++ {
		r, err := c.DirectoryPage(ctx, gateway, after, DirectoryPageSize)
		if err != nil {
			return nil, 0, err
		}
		if r.Set != nil {
			count = r.Set.Count
		}
		all = append(all, r.Items...)
		if len(r.Items) == 0 || len(all) >= count {
			break
		}
		after = r.Items[len(r.Items)-1].JID
	}
	return all, count, nil
}

// SearchPage submits the XEP-0055 form with nick = text (empty: every
// visible endpoint) for one RSM page after the item id after (nil: the
// first page).
func (c *Client) SearchPage(ctx context.Context, gateway, text string, after *string, max int) (search.Result, error) {
	req := search.Query{Nick: text, RSM: &wire.RSMRequest{Max: &max, After: after}}
	q, err := c.IQ(ctx, IQTimeout, "set", gateway, req.TokenReader())
	if err != nil {
		return search.Result{}, err
	}
	res, err := search.ParseResult(q)
	if err != nil {
		return search.Result{}, fmt.Errorf("search result from %s: %w", gateway, err)
	}
	return res, nil
}

// Search reads every page of a search: the items and their count.
func (c *Client) Search(ctx context.Context, gateway, text string) ([]search.Item, int, error) {
	var all []search.Item
	var after *string
	for page := 0; page < maxPages; page++ {
		res, err := c.SearchPage(ctx, gateway, text, after, SearchPageSize)
		if err != nil {
			return nil, 0, err
		}
		all = append(all, res.Items...)
		if res.Set == nil || len(res.Items) == 0 {
			return all, len(all), nil
		}
		if len(all) >= res.Set.Count {
			return all, res.Set.Count, nil
		}
		last := res.Set.Last
		after = &last
	}
	return all, len(all), nil
}
