package taskd

import (
	"context"
	"encoding/json"
	"errors"

	"agentgw/db"
	"agentgw/manifest"
	"agentgw/task"

	"mellium.im/xmpp/jid"
)

// What the ad-hoc command surface (package adhoc, through the gateway)
// needs beyond the wire operations: the pinned manifest, and a session's
// task found by its request ID.

// Manifest returns the manifest of version of the active endpoint
// target, from the cache when it has it, or task.ErrNotFound.
func (s *Service) Manifest(ctx context.Context, target, version string) (*manifest.Manifest, error) {
	return s.pinned(ctx, target, version)
}

// TaskByRequest returns the committed task that from's bare JID admitted
// at the endpoint to under requestID, or task.ErrNotFound: for another
// caller, or once it has been purged, as for a task that never existed.
// An expired task (past retention) is task.ErrNotFound too.
func (s *Service) TaskByRequest(ctx context.Context, from, to jid.JID, requestID string) (task.Task, error) {
	rec, err := s.store.TaskByRequest(ctx, from.Bare().String(), to.Bare().String(), requestID)
	switch {
	case errors.Is(err, db.ErrNotFound):
		return task.Task{}, task.ErrNotFound
	case err != nil:
		return task.Task{}, err
	}
	t, err := decode(rec)
	if err != nil {
		return task.Task{}, err
	}
	if t.Expired(s.clock.Now()) {
		return task.Task{}, task.ErrNotFound
	}
	return t, nil
}

// LastProgress returns the stage and message of the latest progress event
// of a task, if it has one.
func (s *Service) LastProgress(ctx context.Context, id string) (stage, message string, err error) {
	ev, err := s.store.LastTaskEvent(ctx, id, string(task.EventProgress))
	switch {
	case errors.Is(err, db.ErrNotFound):
		return "", "", nil
	case err != nil:
		return "", "", err
	}
	var p struct {
		Stage   string `json:"stage"`
		Message string `json:"message"`
	}
	if json.Unmarshal(ev.Payload, &p) != nil {
		return "", "", nil
	}
	return p.Stage, p.Message, nil
}
