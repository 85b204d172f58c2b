// Package layer is the MCP layer both HTTP listeners share (`agentgw mcp
// -http`, package mcpface, and [chat] mcp_listen, package chatface), and
// stdio where it applies: the one scope check (Scopes), the bearer token
// lookup, the Origin and Host checks, the refusal of JSON-RPC batches
// where the revision has none, the sessions per token, counted
// atomically, and refusals, each logged once with its reason and counted
// in /metrics (Listener). The faces keep their own tools and build on it.
package layer

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"agentgw/scope"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// CodeForbidden is the JSON-RPC error code of a request outside the
// token's scopes (or past a limit).
const CodeForbidden = -32003

// Forbidden is the error of what, which needs the scope sc.
func Forbidden(what, sc string) error {
	return &jsonrpc.Error{Code: CodeForbidden, Message: fmt.Sprintf("forbidden: %s needs the scope %s, which this token does not hold", what, sc)}
}

// methodScopes are the scopes of the methods other than tools/call.
var methodScopes = map[string]string{
	"resources/list":           scope.ResourcesList,
	"resources/templates/list": scope.ResourcesList,
	"resources/subscribe":      scope.ResourcesList,
	"resources/unsubscribe":    scope.ResourcesList,
	"resources/read":           scope.ResourcesRead,
}

// IsMessageURI reports whether uri names a message (mid:), in any case.
func IsMessageURI(uri string) bool {
	return len(uri) >= 4 && strings.EqualFold(uri[:4], "mid:")
}

// ScopeCheck is what Scopes needs to know of a face.
type ScopeCheck struct {
	// Held returns the scopes of the request's client.
	Held func(mcp.Request) scope.Set
	// ToolScope returns the scope a tool needs, or "" for a tool the face
	// does not know (refused, even to a holder of every scope).
	ToolScope func(name string) string
	// Ready, if set, is waited for before tools/list and tools/call (the
	// face's tool list is complete).
	Ready func(context.Context)
	// Refused, if set, hears each refusal: the method and the scope
	// missing ("" for an unknown tool).
	Refused func(ctx context.Context, method, missing string)
}

// Scopes is the receiving middleware that enforces c's scopes, the same
// on every face: tools/list shows only the tools the client may call;
// tools/call of a tool outside them, or of an unknown tool, is refused;
// resources/* need Resources.List or Resources.Read; and a message (a
// mid: resource) is the scope Tools.Message.Get's: without it, it is not
// listed, and reading it answers as for a missing resource, whether it
// exists or not (reading one removes it from the queue).
func Scopes(c ScopeCheck) mcp.Middleware {
	refused := func(ctx context.Context, method, missing string) {
		if c.Refused != nil {
			c.Refused(ctx, method, missing)
		}
	}
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			held := c.Held(req)
			if c.Ready != nil && (method == "tools/list" || method == "tools/call") {
				c.Ready(ctx)
			}
			switch method {
			case "tools/call":
				name := req.(*mcp.CallToolRequest).Params.Name
				sc := c.ToolScope(name)
				if sc == "" {
					refused(ctx, method, "")
					return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown tool %q", name)}
				}
				if !held.Has(sc) {
					refused(ctx, method, sc)
					return nil, Forbidden("tool "+name, sc)
				}
			case "tools/list":
				res, err := next(ctx, method, req)
				if lr, ok := res.(*mcp.ListToolsResult); ok && err == nil {
					lr.Tools = slices.DeleteFunc(slices.Clone(lr.Tools), func(t *mcp.Tool) bool {
						sc := c.ToolScope(t.Name)
						return sc == "" || !held.Has(sc)
					})
				}
				return res, err
			case "resources/list":
				if !held.Has(scope.ResourcesList) {
					refused(ctx, method, scope.ResourcesList)
					return nil, Forbidden(method, scope.ResourcesList)
				}
				res, err := next(ctx, method, req)
				if lr, ok := res.(*mcp.ListResourcesResult); ok && err == nil && !held.Has(scope.MessageGet) {
					lr.Resources = slices.DeleteFunc(slices.Clone(lr.Resources), func(r *mcp.Resource) bool { return IsMessageURI(r.URI) })
				}
				return res, err
			case "resources/read":
				if !held.Has(scope.ResourcesRead) {
					refused(ctx, method, scope.ResourcesRead)
					return nil, Forbidden(method, scope.ResourcesRead)
				}
				if uri := req.(*mcp.ReadResourceRequest).Params.URI; IsMessageURI(uri) && !held.Has(scope.MessageGet) {
					refused(ctx, method, scope.MessageGet)
					return nil, mcp.ResourceNotFoundError(uri)
				}
			case "subscriptions/listen":
				// The current revision's resources/subscribe: hearing of
				// resources needs Resources.List, as subscribing does.
				if lr, ok := req.(*mcp.SubscriptionsListenRequest); ok && lr.Params != nil && lr.Params.Notifications != nil &&
					(lr.Params.Notifications.ResourcesListChanged || len(lr.Params.Notifications.ResourceSubscriptions) > 0) &&
					!held.Has(scope.ResourcesList) {
					refused(ctx, method, scope.ResourcesList)
					return nil, Forbidden("listening to resources", scope.ResourcesList)
				}
			default:
				if sc, ok := methodScopes[method]; ok && !held.Has(sc) {
					refused(ctx, method, sc)
					return nil, Forbidden(method, sc)
				}
			}
			return next(ctx, method, req)
		}
	}
}

// TokenScopes returns the scopes of the request's bearer token; none
// without one.
func TokenScopes(req mcp.Request) scope.Set {
	if ex := req.GetExtra(); ex != nil && ex.TokenInfo != nil {
		return scope.Of(ex.TokenInfo.Scopes)
	}
	return scope.Set{}
}
