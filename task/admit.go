package task

import (
	"fmt"
	"time"

	"agentgw/manifest"

	"mellium.im/xmpp/jid"
)

// Prepared is an invocation that passed every admission check that needs
// only the pinned manifest: what Admit needs to admit or replay it.
type Prepared struct {
	// RequestID is the caller's request-id.
	RequestID string
	// Caller is the sender's bare JID; Route its full JID.
	Caller, Route jid.JID
	// Target is the endpoint bare JID (the manifest's agent.jid).
	Target jid.JID
	// Tool and APIVersion are the pinned tool name and version.
	Tool, APIVersion string
	// ManifestHash is the pinned manifest digest.
	ManifestHash [32]byte
	// Args is the validated argument object in RFC 8785 form.
	Args []byte
	// Deadline is the caller's deadline, or zero.
	Deadline Instant
	// Fingerprint is the replay fingerprint of the request.
	Fingerprint [32]byte
	// Features are the tool's declared task features.
	Features Features
	// DefaultTimeout and MaxTimeout are the tool's defaultTimeoutSeconds
	// and maximumTimeoutSeconds; zero when not declared.
	DefaultTimeout, MaxTimeout time.Duration
}

// Prepare runs the admission checks of "Invocation" that follow
// authorization, against the manifest pinned by inv's api-version: version
// and tool (<item-not-found/>), hash (<conflict/>), I-JSON and the input
// schema (<not-acceptable/>, or <resource-constraint/> past a bound); in
// full in docs/task-package.md, "Prepare".
//
// The gateway MUST have authorized from for man's endpoint and inv.Tool
// before calling Prepare, so that no error here reveals anything to an
// unauthorized sender. No error text reflects the request.
func (m *Machine) Prepare(inv Invoke, from jid.JID, man *manifest.Manifest) (Prepared, error) {
	if inv.APIVersion != man.Version {
		return Prepared{}, ErrNotFound
	}
	tool, ok := man.Tool(inv.Tool)
	if !ok {
		return Prepared{}, ErrNotFound
	}
	if inv.ManifestHash != man.Hash {
		return Prepared{}, conflict("manifest hash does not match the pinned version")
	}
	args, err := canonicalJSON([]byte(inv.Arguments), m.cfg.MaxArgumentBytes, "arguments")
	if err != nil {
		return Prepared{}, err
	}
	// Parse compiled the schema with the manifest; a Tool made otherwise
	// goes through the process-wide cache.
	sch := tool.InputValidator()
	if sch == nil {
		if sch, err = manifest.CachedValidator(tool.InputSchema, true); err != nil {
			// The schema passed these rules at registration.
			return Prepared{}, fmt.Errorf("task: compile pinned input schema: %w", err)
		}
	}
	if err := validateValue(sch, args); err != nil {
		return Prepared{}, validationAnswer(err, "arguments", "arguments do not satisfy the input schema")
	}
	target, err := jid.Parse(man.JID)
	if err != nil {
		// Parse checked agent.jid at registration.
		return Prepared{}, fmt.Errorf("task: pinned manifest's agent.jid: %w", err)
	}
	req := Prepared{
		RequestID:    inv.RequestID,
		Caller:       from.Bare(),
		Route:        from,
		Target:       target,
		Tool:         tool.Name,
		APIVersion:   man.Version,
		ManifestHash: man.Hash,
		Args:         args,
		Deadline:     inv.Deadline,
		Features: Features{
			Progress: tool.Ext.SupportsProgress,
			Cancel:   tool.Ext.SupportsCancellation,
			Input:    tool.Ext.SupportsInput,
		},
		DefaultTimeout: time.Duration(tool.Ext.DefaultTimeoutSeconds) * time.Second,
		MaxTimeout:     time.Duration(tool.Ext.MaximumTimeoutSeconds) * time.Second,
	}
	req.Fingerprint = Fingerprint(FingerprintInput{
		Caller: req.Caller.String(), Target: req.Target.String(), RequestID: req.RequestID,
		Tool: req.Tool, APIVersion: req.APIVersion, ManifestHash: req.ManifestHash,
		Arguments: req.Args, Deadline: req.Deadline,
	})
	return req, nil
}

// Admission is the outcome of Admit.
type Admission struct {
	// Task is the admitted task, or the original one for a replay.
	Task Task
	// Replay reports an identical replay: nothing is inserted and nothing
	// is dispatched; the original <accepted/> is returned.
	Replay bool
	// RouteChanged reports a replay from another full JID of the same
	// caller; Task.Route holds the new route, which the gateway may store
	// (without an event) so that events reach the resource that retried.
	RouteChanged bool
}

// Accepted returns the <accepted/> to send.
func (a Admission) Accepted() Accepted { return a.Task.Accepted() }

// Admit admits req at now, or answers a replay. prior is the retained task
// with the same caller, target and request ID, or nil; the gateway looks it
// up and inserts the new task (with its replay record) in ONE transaction,
// and sends <accepted/> only after the commit.
//
// A prior task with the same fingerprint is an identical replay
// (returned, never executed again); with a different fingerprint the
// answer is <conflict/>. Only then is the caller's deadline compared with
// now: a deadline already reached is <not-acceptable/>. A new task gets
// its effective deadline (see Task.Deadline), retain-until and purge time.
func (m *Machine) Admit(req Prepared, prior *Task, now time.Time) (Admission, error) {
	if prior != nil {
		if prior.Fingerprint != req.Fingerprint || !prior.Caller.Equal(req.Caller) ||
			!prior.Target.Equal(req.Target) || prior.RequestID != req.RequestID {
			return Admission{}, conflict("request-id was used for a different request")
		}
		a := Admission{Task: *prior, Replay: true}
		if req.Route.String() != "" && !req.Route.Equal(prior.Route) {
			a.Task.Route, a.RouteChanged = req.Route, true
		}
		return a, nil
	}
	if !req.Deadline.IsZero() && req.Deadline.Reached(now) {
		return Admission{}, notAcceptable("deadline has passed")
	}
	created := stamp(now)
	maxTimeout := m.cfg.MaxTimeout
	if req.MaxTimeout > 0 && req.MaxTimeout < maxTimeout {
		maxTimeout = req.MaxTimeout
	}
	deadline := created.Add(maxTimeout)
	if !req.Deadline.IsZero() {
		if d := req.Deadline.Time(); d.Before(deadline) {
			deadline = d
		}
	} else {
		timeout := m.cfg.DefaultTimeout
		if req.DefaultTimeout > 0 {
			timeout = req.DefaultTimeout
		}
		deadline = created.Add(min(timeout, maxTimeout))
	}
	retain := stamp(deadline.Add(m.cfg.Retention))
	purge := created.Add(m.cfg.ReplayWindow)
	if purge.Before(retain) {
		purge = retain
	}
	id, err := NewID(m.cfg.Rand, prefixTask)
	if err != nil {
		return Admission{}, err
	}
	return Admission{Task: Task{
		ID:           id,
		RequestID:    req.RequestID,
		Fingerprint:  req.Fingerprint,
		Caller:       req.Caller,
		Route:        req.Route,
		Target:       req.Target,
		Tool:         req.Tool,
		APIVersion:   req.APIVersion,
		ManifestHash: req.ManifestHash,
		Args:         req.Args,
		Features:     req.Features,
		State:        StateAccepted,
		Revision:     0,
		Created:      created,
		Updated:      created,
		Deadline:     deadline,
		RetainUntil:  retain,
		PurgeAfter:   purge,
	}}, nil
}
