package mcpface

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Input in an MCP task (docs/mcp.md, "Input in an MCP task"), after the
// "input_required" status of MCP Tasks (revision 2025-11-25). A
// task-augmented call has no request of its own to elicit through, so the
// follower of the task waits for the client's tasks/result and elicits
// through it, with the related-task metadata. go-sdk cannot send a request
// on a connection it does not serve a request of, so the layer sends
// elicitation/create itself (rawElicit) and keeps the client's answer for
// itself (deliver).

// asker is where a call's input requests are elicited: the session of a
// plain call, or a tasks/result request of an MCP task.
type asker struct {
	// canElicit: the client declared elicitation (and, over HTTP, can
	// receive requests on the tasks/result response).
	canElicit bool
	elicit    func(ctx context.Context, p *mcp.ElicitParams) (*mcp.ElicitResult, error)
}

// errAskerGone: the tasks/result request an elicitation went through
// ended before the answer. It is no answer: the next tasks/result asks
// again.
var errAskerGone = errors.New("the tasks/result request ended before the elicitation was answered")

// taskInput is the input side of one followed MCP task.
type taskInput struct {
	// question is the pending question while the task is input_required.
	question string
	askers   []*asker
	// arrived is closed when an asker comes.
	arrived chan struct{}
}

// elicitWait is an elicitation/create sent by the layer, waiting for the
// answer of its owner's client.
type elicitWait struct {
	owner  string
	answer chan *jsonrpc.Response
}

// taskInputLocked returns the input side of task id; s.mu is held.
func (s *Server) taskInputLocked(id string) *taskInput {
	ti := s.inputs[id]
	if ti == nil {
		ti = &taskInput{arrived: make(chan struct{})}
		s.inputs[id] = ti
	}
	return ti
}

// dropTaskInputLocked forgets the input side of task id once nothing
// refers to it; s.mu is held.
func (s *Server) dropTaskInputLocked(id string) {
	if ti := s.inputs[id]; ti != nil && ti.question == "" && len(ti.askers) == 0 {
		delete(s.inputs, id)
	}
}

// setQuestion records the pending question of task id ("": none).
func (s *Server) setQuestion(id, question string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if question == "" {
		if ti := s.inputs[id]; ti != nil {
			ti.question = ""
		}
		s.dropTaskInputLocked(id)
		return
	}
	s.taskInputLocked(id).question = question
}

// question is the pending question of task id, if any.
func (s *Server) question(id string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ti := s.inputs[id]; ti != nil {
		return ti.question
	}
	return ""
}

// addAsker offers a for the input requests of task id until remove.
func (s *Server) addAsker(id string, a *asker) (remove func()) {
	s.mu.Lock()
	ti := s.taskInputLocked(id)
	ti.askers = append(ti.askers, a)
	close(ti.arrived)
	ti.arrived = make(chan struct{})
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if ti := s.inputs[id]; ti != nil {
			for i, x := range ti.askers {
				if x == a {
					ti.askers = append(ti.askers[:i:i], ti.askers[i+1:]...)
					break
				}
			}
		}
		s.dropTaskInputLocked(id)
	}
}

// takeAsker returns the latest asker of task id that can elicit, else the
// latest one, else nil.
func (s *Server) takeAsker(id string) *asker {
	s.mu.Lock()
	defer s.mu.Unlock()
	ti := s.inputs[id]
	if ti == nil || len(ti.askers) == 0 {
		return nil
	}
	for i := len(ti.askers) - 1; i >= 0; i-- {
		if ti.askers[i].canElicit {
			return ti.askers[i]
		}
	}
	return ti.askers[len(ti.askers)-1]
}

// askerArrived returns a channel closed when the next asker of task id
// comes.
func (s *Server) askerArrived(id string) <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.taskInputLocked(id).arrived
}

// forgetTaskInput drops the input side of a task no longer followed.
func (s *Server) forgetTaskInput(id string) { s.setQuestion(id, "") }

// rawElicit sends elicitation/create through send and waits for the
// answer of owner's client (handed over by deliver). ctx is the
// follower's; when req, the asking request's context, ends first the
// result is errAskerGone. Either way the client is told the request is
// cancelled.
func (s *Server) rawElicit(ctx, req context.Context, owner string, send func(jsonrpc.Message) error, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	key := randomID("agentgw-elicit-")
	id, err := jsonrpc.MakeID(key)
	if err != nil {
		return nil, err
	}
	params, err := json.Marshal(p)
	if err != nil {
		return nil, err
	}
	if req.Err() != nil {
		return nil, errAskerGone
	}
	ch := make(chan *jsonrpc.Response, 1)
	s.mu.Lock()
	s.elicits[key] = elicitWait{owner: owner, answer: ch}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.elicits, key)
		s.mu.Unlock()
	}()
	if err := send(&jsonrpc.Request{ID: id, Method: "elicitation/create", Params: params}); err != nil {
		return nil, fmt.Errorf("%w: %v", errAskerGone, err)
	}
	cancelled := func() {
		raw, _ := json.Marshal(map[string]any{"requestId": key, "reason": "the task no longer waits for this input"})
		_ = send(&jsonrpc.Request{Method: "notifications/cancelled", Params: raw})
	}
	select {
	case resp := <-ch:
		if resp.Error != nil {
			return nil, resp.Error
		}
		var res mcp.ElicitResult
		if err := json.Unmarshal(resp.Result, &res); err != nil {
			return nil, errors.New("the elicitation result is not an ElicitResult (an object with an action and, on accept, an object content)")
		}
		switch res.Action {
		case "accept", "decline", "cancel":
		default:
			return nil, errors.New("the elicitation result's action is not accept, decline or cancel")
		}
		return &res, nil
	case <-ctx.Done():
		cancelled()
		return nil, ctx.Err()
	case <-req.Done():
		cancelled()
		return nil, errAskerGone
	}
}

// deliver hands a response of owner's client to the elicitation waiting
// for it, and reports whether there was one: the layer keeps it from
// go-sdk, which never sent that request.
func (s *Server) deliver(owner string, resp *jsonrpc.Response) bool {
	key, ok := resp.ID.Raw().(string)
	if !ok {
		return false
	}
	s.mu.Lock()
	w, ok := s.elicits[key]
	s.mu.Unlock()
	if !ok || w.owner != owner {
		return false
	}
	select {
	case w.answer <- resp:
	default: // a second answer to the same request
	}
	return true
}

// sessionElicits reports whether the go-sdk session id (HTTP's
// Mcp-Session-Id) declared elicitation.
func (s *Server) sessionElicits(id string) bool {
	if id == "" {
		return false
	}
	for ss := range s.mcp.Sessions() {
		if ss.ID() == id {
			return elicitationSupported(ss)
		}
	}
	return false
}
