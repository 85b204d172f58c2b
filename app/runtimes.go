package app

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"time"

	"agentgw/config"
	"agentgw/db"
	"agentgw/internal/privfile"
	"agentgw/mcpsync"
	"agentgw/runtime"
	"agentgw/runtime/builtin"
	"agentgw/runtime/exec"
	"agentgw/runtime/mcpclient"
	"agentgw/taskd"
)

// startSyncTimeout bounds the first imports of the mcp endpoints, which
// Runtimes waits for (they run in parallel).
const startSyncTimeout = 45 * time.Second

// RuntimeOptions configures Runtimes.
type RuntimeOptions struct {
	// Availability, if set, hears whether the MCP server of each mcp
	// endpoint is up (Gateway.Availability), so that presence follows.
	Availability taskd.Availability
	// Log receives the mcp endpoints' imports and availability changes.
	Log *slog.Logger
	// MCP, if set, may change the options of each mcp runtime before it
	// is built (tests shorten timeouts with it).
	MCP func(endpoint string, o *mcpclient.Options)
	// Tracker, if set, records the process group of every exec tool and
	// stdio MCP server (ProcessRecorder).
	Tracker runtime.ProcessTracker
	// StateDir, if set, is the gateway's state directory (the database's):
	// an endpoint with no dir runs in StateDir/run/JID, 0700.
	StateDir string
	// Sandbox, if set, confines every exec tool and stdio MCP server
	// (PlanSandbox); nil starts them directly.
	Sandbox *SandboxPlan
}

// Hosted is the runtime of every configured [[endpoint]], as Runtimes
// built them.
type Hosted struct {
	// Runtimes maps an endpoint's bare JID to its runtime: the task
	// service's Options.Runtimes.
	Runtimes map[string]runtime.Runtime
	// MCP holds the mcp endpoints, by bare JID.
	MCP map[string]*mcpsync.Endpoint
}

// Runtimes builds the runtime of every configured [[endpoint]], keyed by
// endpoint bare JID, and makes every builtin and mcp endpoint ready: a
// builtin manifest is registered and activated (its version derives from
// its content, so a restart changes nothing); an mcp server's tools are
// imported (mcpsync), in parallel, waiting at most startSyncTimeout; one
// that cannot be reached keeps its version and is imported once it is up.
// Presence follows each server through opts.Availability.
//
// Errors name the [[endpoint]] entry. Close the result to stop the MCP
// servers, after the task service. A new runtime kind is added here,
// beside its configuration keys (config.endpointRuntimes).
func Runtimes(ctx context.Context, store *db.Store, endpoints []config.Endpoint, opts RuntimeOptions) (*Hosted, error) {
	h := &Hosted{Runtimes: make(map[string]runtime.Runtime, len(endpoints)), MCP: map[string]*mcpsync.Endpoint{}}
	var demo *builtin.Runtime
	for i, ep := range endpoints {
		key := fmt.Sprintf("endpoint[%d]", i)
		if ep.Dir == "" && opts.StateDir != "" && (ep.Runtime == config.RuntimeExec || ep.Runtime == config.RuntimeMCP && len(ep.Command) > 0) {
			d, err := privfile.WorkDir(filepath.Join(opts.StateDir, "run"), ep.JID)
			if err != nil {
				h.Close()
				return nil, fmt.Errorf("%s: working directory: %w", key, err)
			}
			ep.Dir = d
		}
		switch ep.Runtime {
		case config.RuntimeBuiltin:
			if err := RegisterBuiltin(ctx, store, ep.JID); err != nil {
				h.Close()
				return nil, fmt.Errorf("%s: %w", key, err)
			}
			if demo == nil {
				demo = builtin.New(builtin.Options{})
			}
			h.Runtimes[ep.JID] = demo
		case config.RuntimeExec:
			rt, err := exec.New(exec.Options{
				Command: ep.Command, Dir: ep.Dir, Env: ep.Env,
				Grace: ep.Grace, KillGrace: ep.KillGrace,
				Tracker: opts.Tracker,
				Sandbox: opts.Sandbox.Child(ep, false),
			})
			if err != nil {
				h.Close()
				return nil, fmt.Errorf("%s.command: %w", key, err)
			}
			h.Runtimes[ep.JID] = rt
		case config.RuntimeMCP:
			eo := mcpsync.EndpointOptions{Availability: opts.Availability, Log: opts.Log}
			if opts.MCP != nil || opts.Tracker != nil || opts.Sandbox != nil {
				jid := ep.JID
				child := opts.Sandbox.Child(ep, true)
				eo.Adjust = func(o *mcpclient.Options) {
					o.Tracker = opts.Tracker
					if len(o.Command) > 0 {
						o.Sandbox = child
					}
					if opts.MCP != nil {
						opts.MCP(jid, o)
					}
				}
			}
			e, err := mcpsync.NewEndpoint(store, ep.JID, MCPClientOptions(ep), eo)
			if err != nil {
				h.Close()
				return nil, fmt.Errorf("%s: %w", key, err)
			}
			h.MCP[ep.JID] = e
			h.Runtimes[ep.JID] = e.Runtime()
		default:
			h.Close()
			return nil, fmt.Errorf("%s.runtime: %q is not available in this version", key, ep.Runtime)
		}
	}
	// The first imports. Failures are logged by the endpoint and leave
	// its active version as it was.
	sctx, cancel := context.WithTimeout(ctx, startSyncTimeout)
	defer cancel()
	var wg sync.WaitGroup
	for _, e := range h.MCP {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _ = e.Sync(sctx)
		}()
	}
	wg.Wait()
	return h, nil
}

// Availability wraps a, the task service's Options.Availability, so that
// it ignores the mcp endpoints: their presence follows their MCP server
// alone, not whether the runtime accepted a task (an mcp runtime accepts
// every task and reports a server that is down as the task's failure).
func (h *Hosted) Availability(a taskd.Availability) taskd.Availability {
	if a == nil || len(h.MCP) == 0 {
		return a
	}
	return selfReported{a: a, skip: h.MCP}
}

// selfReported passes on the reports of endpoints not in skip.
type selfReported struct {
	a    taskd.Availability
	skip map[string]*mcpsync.Endpoint
}

func (s selfReported) MarkDown(ep string) {
	if s.skip[ep] == nil {
		s.a.MarkDown(ep)
	}
}

func (s selfReported) MarkUp(ep string) {
	if s.skip[ep] == nil {
		s.a.MarkUp(ep)
	}
}

// Close stops every MCP server. Close the task service first, so that
// executions end before their servers do.
func (h *Hosted) Close() error {
	var wg sync.WaitGroup
	for _, e := range h.MCP {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = e.Close()
		}()
	}
	wg.Wait()
	return nil
}

// RegisterBuiltin registers the demo manifest of a builtin endpoint at jid
// (origin builtin) and activates it. It is idempotent.
func RegisterBuiltin(ctx context.Context, store *db.Store, jid string) error {
	m, err := builtin.Manifest(jid)
	if err != nil {
		return err
	}
	v := db.Version{
		JID: m.JID, Version: m.Version, Hash: m.Hash, Canonical: m.Canonical,
		Name: m.Name, Title: m.Title, Description: m.Description,
	}
	if _, err := store.RegisterVersion(ctx, v, db.OriginBuiltin); err != nil {
		return fmt.Errorf("register builtin manifest %s: %w", m.Version, err)
	}
	if err := store.Activate(ctx, m.JID, m.Version, &m.Hash); err != nil {
		return fmt.Errorf("activate builtin manifest %s: %w", m.Version, err)
	}
	return nil
}
