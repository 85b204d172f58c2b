package taskd

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"agentgw/db"
	"agentgw/manifest"
	"agentgw/surface"
	"agentgw/task"
)

// maxCachedManifests and maxCachedManifestBytes bound the parsed
// manifests kept in memory, in number and in canonical bytes; past either
// the cache starts over. A parsed manifest keeps its compiled tool schemas,
// which take about 25 times its canonical size, so the byte bound keeps
// the cache under about 100 MB whatever is registered.
const (
	maxCachedManifests     = 256
	maxCachedManifestBytes = 4 << 20
)

// Admission is the outcome of Invoke.
type Admission struct {
	// Accepted is the <accepted/> to send: the new task's, or the
	// original one for an identical replay.
	Accepted task.Accepted
	// Dispatch starts the new task: it commits running and hands the call
	// to the runtime, on a goroutine of its own. Call it once the
	// <accepted/> has been written, so that the caller sees it before any
	// event. It is nil for a replay, which is never executed again.
	Dispatch func()
}

// Invoke admits an <invoke/> sent by from to the endpoint to, under pol
// (ProtoXEP "Invocation"; the order is package task's): syntax, then
// authorization of exactly this tool (else <item-not-found/>, the bytes of
// a nonexistent endpoint), the active pinned version and approval grants
// (failing closed), a runtime (else <service-unavailable/>), Prepare, and
// Admit as of now, before the one group commit that checks the version
// again, the replay record, the deadline and capacity, and inserts the task
// with its version hold. The steps in full: docs/task-package.md, "Invoke".
//
// Invoke returns once the task and its replay record are durable.
func (s *Service) Invoke(ctx context.Context, r surface.Request) (Admission, error) {
	pol, from, to, payload := r.Policy, r.From, r.To, r.Payload
	inv, err := task.ParseInvoke(payload)
	if err != nil {
		return Admission{}, err
	}
	target := to.Bare().String()
	if !pol.CanInvoke(from, target, inv.Tool) {
		return Admission{}, task.ErrNotFound
	}
	man, err := s.pinned(ctx, target, inv.APIVersion)
	if err != nil {
		return Admission{}, err
	}
	if tool, ok := man.Tool(inv.Tool); ok && tool.NeedsApproval() &&
		!pol.Approved(from, target, tool.Name, tool.Ext.ApprovalRequired, tool.Ext.RequiredPermissions) {
		// Fail closed, with the bytes an unauthorized caller gets.
		return Admission{}, task.ErrNotFound
	}
	if s.opts.Runtimes[target] == nil {
		return Admission{}, task.ErrServiceUnavailable
	}
	req, err := s.m.Prepare(inv, from, man)
	if err != nil {
		return Admission{}, err
	}

	// The new task is made (ID, times) and encoded before the commit, by
	// this caller alone: the batch, which every admission shares, only
	// looks up the replay record and inserts. The
	// admission instant is when the request was taken up.
	fresh, freshErr := s.m.Admit(req, nil, s.clock.Now())
	var freshRec db.TaskRecord
	if freshErr == nil {
		if freshRec, err = record(&fresh.Task); err != nil {
			return Admission{}, err
		}
	}
	capErr := s.reserve()
	reserved := capErr == nil
	var (
		adm    task.Admission
		answer error
	)
	// A store fault is retried for callerRetryWindow; one that persists,
	// or a full disk at once, refuses the admission with
	// <resource-constraint/>, type wait (retry.go).
	actx, cancel := context.WithTimeout(ctx, callerRetryWindow)
	defer cancel()
	err = s.commit(actx, time.Time{}, true, func(tx *db.TaskTx) error {
		adm, answer = task.Admission{}, nil
		// The caller's quotas, read in the commit; a replay still finds
		// its task below, whatever they say.
		quotaErr := capErr
		if freshErr == nil && quotaErr == nil {
			if quotaErr = s.checkQuota(tx, req.Caller.String()); quotaErr != nil && !errors.Is(quotaErr, task.ErrResourceConstraint) {
				return quotaErr
			}
		}
		if freshErr == nil && quotaErr == nil {
			// The common case in one statement: pinnable and no replay
			// record. If it inserts nothing, the lookup below says why.
			ok, err := tx.AdmitNew(freshRec)
			if err != nil {
				return err
			}
			if ok {
				if err := tx.Hold(freshRec.ID, s.id, tx.Now().Add(s.opts.LeaseLapse)); err != nil {
					return err
				}
				adm = fresh
				t := fresh.Task
				tx.OnCommit(func() {
					s.mu.Lock()
					s.reserved--
					reserved = false
					s.addLiveLocked(&t)
					s.mu.Unlock()
				})
				return nil
			}
		}
		rec, found, err := tx.Admission(target, req.APIVersion, req.Caller.String(), req.RequestID)
		if err != nil {
			return err
		}
		if found {
			// A replay (or a conflict) comes before the deadline and the
			// capacity checks.
			prior, err := decode(rec)
			if err != nil {
				return err
			}
			adm, answer = s.m.Admit(req, &prior, tx.Now())
			if answer == nil && adm.RouteChanged {
				// Later events go to the resource that retried; no event.
				rec, err := record(&adm.Task)
				if err != nil {
					return err
				}
				return tx.UpdateTask(rec)
			}
			return nil
		}
		if answer = freshErr; answer != nil {
			return nil
		}
		if answer = quotaErr; answer != nil {
			return nil
		}
		// AdmitNew inserted nothing although the endpoint is pinnable
		// and no replay record exists, in the same transaction.
		return errors.New("taskd: admission: the task was neither inserted nor found")
	})
	if reserved {
		// Reserved, but no new task was committed.
		s.unreserve()
	}
	switch {
	case errors.Is(err, db.ErrNotFound):
		// Deactivated, or the version removed, since it was looked up.
		return Admission{}, task.ErrNotFound
	case errors.Is(err, db.ErrCommitterClosed):
		return Admission{}, task.ErrServiceUnavailable
	case db.Transient(err):
		return Admission{}, task.ErrResourceConstraint
	case err != nil:
		return Admission{}, err
	case answer != nil:
		return Admission{}, answer
	}
	out := Admission{Accepted: adm.Accepted()}
	if !adm.Replay {
		id := adm.Task.ID
		out.Dispatch = func() { go s.dispatch(id) }
	}
	return out, nil
}

// pinned returns the manifest of version of the active endpoint target, or
// task.ErrNotFound. Invocation needs no visibility, but an inactive endpoint
// is treated as a nonexistent one, as discovery does; any registered
// version of an active endpoint may be pinned.
//
// A version already parsed is taken from the cache without asking the
// store: versions are immutable, and the admission transaction checks
// again, authoritatively, that the endpoint is active and has the version
// (db.TaskTx.AdmitNew). So a deactivated endpoint whose version is cached
// may answer an authorized caller's invalid request with its validity
// error rather than <item-not-found/>; an unauthorized one never gets that
// far.
func (s *Service) pinned(ctx context.Context, target, version string) (*manifest.Manifest, error) {
	if m := s.manifests.get(target, version); m != nil {
		return m, nil
	}
	active, err := s.store.ActiveSummary(ctx, target)
	switch {
	case errors.Is(err, db.ErrNotFound):
		return nil, task.ErrNotFound
	case err != nil:
		return nil, err
	}
	if version == active.Version {
		if m := s.manifests.get(target, version); m != nil && m.Hash == active.Hash {
			return m, nil
		}
	}
	return s.load(ctx, target, version)
}

// load reads and parses a stored version, through the cache. A version
// that does not exist is task.ErrNotFound.
func (s *Service) load(ctx context.Context, target, version string) (*manifest.Manifest, error) {
	v, err := s.store.Version(ctx, target, version)
	switch {
	case errors.Is(err, db.ErrNotFound):
		return nil, task.ErrNotFound
	case err != nil:
		return nil, err
	}
	if m := s.manifests.get(target, version); m != nil && m.Hash == v.Hash {
		return m, nil
	}
	// The cache keeps the compiled schemas, so that each pinned schema is
	// compiled once while its manifest is cached.
	m, err := manifest.Parse(v.Canonical, manifest.Options{KeepValidators: true})
	if err != nil {
		return nil, fmt.Errorf("taskd: stored manifest %s %s: %w", target, version, err)
	}
	if m.Hash != v.Hash {
		return nil, fmt.Errorf("taskd: stored manifest %s %s does not hash to its stored hash", target, version)
	}
	s.manifests.put(target, version, m)
	return m, nil
}

// tool returns the pinned definition of a task's tool. Versions are
// immutable, so the cache answers without asking the store once it has
// seen the version.
func (s *Service) tool(ctx context.Context, target, version, name string) (*manifest.Tool, error) {
	m := s.manifests.get(target, version)
	if m == nil {
		var err error
		if m, err = s.load(ctx, target, version); err != nil {
			return nil, err
		}
	}
	t, ok := m.Tool(name)
	if !ok {
		return nil, fmt.Errorf("taskd: version %s of %s has no tool %q", version, target, name)
	}
	return t, nil
}

// Hosts reports whether endpoint (a normalized bare JID) has a runtime,
// that is whether its tools can be invoked here.
func (s *Service) Hosts(endpoint string) bool { return s.opts.Runtimes[endpoint] != nil }

// EndpointFeatures returns the task features an endpoint advertises in its
// disco#info for its active version v (ProtoXEP "Endpoint Information"):
// the core namespace and each optional feature some tool declares
// (task.EndpointFeatures), or none for an endpoint without a runtime.
func (s *Service) EndpointFeatures(ctx context.Context, v db.Version) ([]string, error) {
	if !s.Hosts(v.JID) {
		return nil, nil
	}
	m := s.manifests.get(v.JID, v.Version)
	if m == nil || m.Hash != v.Hash {
		var err error
		if m, err = s.load(ctx, v.JID, v.Version); err != nil {
			return nil, err
		}
	}
	return task.EndpointFeatures(m), nil
}

// ToolFeatures returns the optional task features this service implements
// for the tools of endpoint (task.Implemented, for api.Service.TaskFeatures),
// or none for an endpoint without a runtime. A tool node advertises those
// its tool declares.
func (s *Service) ToolFeatures(endpoint string) []string {
	if !s.Hosts(endpoint) {
		return nil
	}
	return task.Implemented
}

// manifestCache holds parsed manifests by endpoint and version. A version
// never changes content (removal leaves a tombstone that only admits the
// same content again), and every lookup still checks the hash it expects.
type manifestCache struct {
	mu    sync.Mutex
	byKey map[string]*manifest.Manifest
	bytes int // canonical bytes held
}

func (c *manifestCache) get(target, version string) *manifest.Manifest {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.byKey[target+" "+version]
}

func (c *manifestCache) put(target, version string, m *manifest.Manifest) {
	c.mu.Lock()
	defer c.mu.Unlock()
	key := target + " " + version
	if old := c.byKey[key]; old != nil {
		c.bytes -= len(old.Canonical)
	}
	if len(c.byKey) >= maxCachedManifests || c.bytes+len(m.Canonical) > maxCachedManifestBytes {
		clear(c.byKey)
		c.bytes = 0
	}
	c.byKey[key] = m
	c.bytes += len(m.Canonical)
}
