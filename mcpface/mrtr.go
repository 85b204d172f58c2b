package mcpface

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"agentgw/agentclient"
	"agentgw/mcpface/layer"
	"agentgw/task"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"mellium.im/xmpp/jid"
)

// Multi round-trip requests (MRTR, MCP 2026-07-28) for plain calls of
// agent tools. On the current revision a server no longer elicits during
// a call: a plain call of CallAgentTool or a projected tool runs as a
// durable task of its caller (as the extension's do), and the call
// answers when the task settles, or with an input_required result when
// the agent asks for input: its question as inputRequests, and a
// requestState naming the task and the question. The client's retry
// with inputResponses and that requestState provides the input to the
// same ProtoXEP task and waits again. The requestState is
// HMAC-SHA-256-sealed with a key of this process, over the caller (its
// token, or the account over stdio), so it can be neither forged nor
// replayed under another token; after a restart of `agentgw mcp` it is
// refused, and the client calls again (docs/mcp-server.md).

// mrtrStateTTL bounds the life of a requestState.
const mrtrStateTTL = time.Hour

// mrtrState is what a requestState carries.
type mrtrState struct {
	Task    string `json:"t"`
	Key     string `json:"k"`
	Expires int64  `json:"e"` // Unix seconds
}

func newMRTRKey() []byte {
	k := make([]byte, 32)
	_, _ = rand.Read(k)
	return k
}

// sealState returns the requestState of st for owner.
func (s *Server) sealState(owner string, st mrtrState) string {
	raw, _ := json.Marshal(st)
	payload := base64.RawURLEncoding.EncodeToString(raw)
	return payload + "." + base64.RawURLEncoding.EncodeToString(s.stateMAC(owner, payload))
}

func (s *Server) stateMAC(owner, payload string) []byte {
	m := hmac.New(sha256.New, s.mrtrKey)
	m.Write([]byte("agentgw-mrtr\x00" + owner + "\x00" + payload))
	return m.Sum(nil)
}

// openState checks a requestState of owner and returns what it carries.
func (s *Server) openState(owner, state string) (mrtrState, bool) {
	payload, sig, ok := strings.Cut(state, ".")
	mac, err := base64.RawURLEncoding.DecodeString(sig)
	if !ok || err != nil || !hmac.Equal(mac, s.stateMAC(owner, payload)) {
		return mrtrState{}, false
	}
	raw, err := base64.RawURLEncoding.DecodeString(payload)
	var st mrtrState
	if err != nil || json.Unmarshal(raw, &st) != nil || time.Now().Unix() > st.Expires {
		return mrtrState{}, false
	}
	return st, true
}

// errBadState is the answer to a requestState that is not this caller's
// (forged, another token's, expired, or from before a restart).
var errBadState = invalidParams("the requestState is not valid for this client (expired, from another token, or from before a restart of agentgw mcp): call the tool again without it")

// agentCall runs a prepared plain call of an agent tool: at the current
// revision through MRTR, before it as the call itself (elicitation
// through the session).
func (g *agents) agentCall(ctx context.Context, req *mcp.CallToolRequest, pc preparedCall) (*mcp.CallToolResult, error) {
	if req == nil || !layer.IsCurrent(req.ProtocolVersion()) {
		return g.call(ctx, req, pc, nil), nil
	}
	owner := g.s.requestOwner(req)
	if owner == "" {
		return g.call(ctx, req, pc, nil), nil
	}
	return g.s.mrtrCall(ctx, req, owner, pc)
}

// mrtrCall is a plain call at the current revision (see above).
func (s *Server) mrtrCall(ctx context.Context, req *mcp.CallToolRequest, owner string, pc preparedCall) (*mcp.CallToolResult, error) {
	var id, answered string
	if state := req.Params.RequestState; state != "" {
		st, ok := s.openState(owner, state)
		if !ok {
			return nil, errBadState
		}
		if _, err := s.store.Task(ctx, s.acct.JID().String(), owner, st.Task); err != nil {
			return nil, errBadState
		}
		id, answered = st.Task, st.Key
		s.addMailbox(id)
		if resp, ok := req.Params.InputResponses[st.Key]; ok {
			raw, err := json.Marshal(resp)
			if err != nil {
				return nil, invalidParams("inputResponses: %v", err)
			}
			s.answerInput(id, st.Key, raw)
		}
	} else {
		bad, rec := s.startTask(owner, pc, nil)
		if bad != nil {
			return bad, nil
		}
		id = rec.ID
		s.addMailbox(id)
	}
	return s.awaitCall(ctx, req, owner, id, answered)
}

// awaitCall waits for task id to settle (its result is the call's) or to
// pose a question other than answered (an input_required result). Its
// progress goes to the call's progress token. The client going away
// cancels the task.
func (s *Server) awaitCall(ctx context.Context, req *mcp.CallToolRequest, owner, id, answered string) (*mcp.CallToolResult, error) {
	token := req.Params.GetProgressToken()
	var sent taskProgress
	progress := 0.0
	for {
		rec, err := s.store.Task(ctx, s.acct.JID().String(), owner, id)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, errBadState
		}
		if rec.Result != nil {
			var res mcp.CallToolResult
			if err := json.Unmarshal(rec.Result, &res); err != nil {
				return nil, err
			}
			return &res, nil
		}
		if q := s.pendingInput(id); q != nil && q.key != answered && rec.Status == string(task.StateInputRequired) {
			if !declaresElicitationNow(req) {
				// An input request the client did not declare is not
				// sent (MRTR): the task cannot go on.
				const why = "the MCP client does not support elicitation"
				ep, _ := jid.Parse(rec.Endpoint)
				cctx, cancel := context.WithTimeout(s.runCtx, taskCancelWait)
				_, _ = s.agents.ac.Cancel(cctx, ep, task.Cancel{TaskID: rec.XMPPTaskID, HasReason: true, Reason: "input not available: " + why}, -1)
				cancel()
				res := errorResult("%s: the agent asked for input, but %s; task %s was cancelled", req.Params.Name, why, rec.XMPPTaskID)
				res.Meta = mcp.Meta{metaXMPP: xmppMeta(rec)}
				return res, nil
			}
			return &mcp.CallToolResult{
				InputRequests: mcp.InputRequestMap{q.key: q.params},
				RequestState:  s.sealState(owner, mrtrState{Task: id, Key: q.key, Expires: time.Now().Add(mrtrStateTTL).Unix()}),
				Meta:          mcp.Meta{metaXMPP: xmppMeta(rec)},
			}, nil
		}
		if pr, ok := s.progressOf(id); ok && token != nil && req.Session != nil && (pr.Message != sent.Message || !samePercent(pr.Percent, sent.Percent)) {
			sent = pr
			p := &mcp.ProgressNotificationParams{ProgressToken: token, Message: pr.Message, Progress: progress + 1}
			if pr.Percent != nil && *pr.Percent > progress {
				p.Progress, p.Total = *pr.Percent, 100
			}
			progress = p.Progress
			_ = req.Session.NotifyProgress(ctx, p)
		}
		changed := s.taskWaiter(id)
		var posted <-chan struct{}
		if mb := s.mailboxOf(id); mb != nil {
			mb.mu.Lock()
			posted = mb.posted
			mb.mu.Unlock()
		}
		select {
		case <-changed:
		case <-posted:
		case <-time.After(250 * time.Millisecond):
		case <-ctx.Done():
			// The client gave up the call: cancel its task.
			ep, _ := jid.Parse(rec.Endpoint)
			go func() {
				cctx, cancel := context.WithTimeout(s.runCtx, taskCancelWait)
				defer cancel()
				_, _ = s.agents.ac.Cancel(cctx, ep, task.Cancel{TaskID: rec.XMPPTaskID, HasReason: true, Reason: "the MCP client ended the call"}, -1)
			}()
			return nil, errors.New("the call ended before its task settled: " + agentclient.SafeText(ctx.Err().Error(), 100))
		}
	}
}

// declaresElicitationNow reports whether the client of a current-revision
// request declared elicitation in its _meta.
func declaresElicitationNow(req mcp.Request) bool {
	r, ok := req.(revisionRequest)
	if !ok {
		return false
	}
	c := r.ClientCapabilities()
	return c != nil && c.Elicitation != nil
}

func samePercent(a, b *float64) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}
