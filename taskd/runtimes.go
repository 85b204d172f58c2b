package taskd

import (
	"context"
	"fmt"

	"agentgw/config"
	"agentgw/db"
	"agentgw/runtime"
	"agentgw/runtime/builtin"
	"agentgw/runtime/exec"
)

// Runtimes builds the runtime of every configured [[endpoint]], keyed by
// endpoint bare JID, and makes every builtin endpoint ready: its generated
// manifest (builtin.Manifest) is registered with origin builtin and
// activated. Its version derives from its content, so doing this at every
// start changes nothing unless the demo tools changed. Errors name the
// [[endpoint]] entry.
//
// A new runtime kind is added here, beside its configuration keys
// (config.endpointRuntimes).
func Runtimes(ctx context.Context, store *db.Store, endpoints []config.Endpoint) (map[string]runtime.Runtime, error) {
	out := make(map[string]runtime.Runtime, len(endpoints))
	var demo *builtin.Runtime
	for i, ep := range endpoints {
		key := fmt.Sprintf("endpoint[%d]", i)
		switch ep.Runtime {
		case config.RuntimeBuiltin:
			if err := RegisterBuiltin(ctx, store, ep.JID); err != nil {
				return nil, fmt.Errorf("%s: %w", key, err)
			}
			if demo == nil {
				demo = builtin.New(builtin.Options{})
			}
			out[ep.JID] = demo
		case config.RuntimeExec:
			rt, err := exec.New(exec.Options{
				Command: ep.Command, Dir: ep.Dir, Env: ep.Env,
				Grace: ep.Grace, KillGrace: ep.KillGrace,
			})
			if err != nil {
				return nil, fmt.Errorf("%s.command: %w", key, err)
			}
			out[ep.JID] = rt
		default:
			return nil, fmt.Errorf("%s.runtime: %q is not available in this version", key, ep.Runtime)
		}
	}
	return out, nil
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
