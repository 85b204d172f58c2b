package mcpface

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// notifications/tasks/status (MCP Tasks, revision 2025-11-25: a receiver
// MAY send it when a task's status changes, and the requestor must not
// rely on it). The layer sends it to the stdio connection that created
// the task, while that connection is open, once per change of the MCP
// status (several XMPP states are one MCP status). Over Streamable HTTP it
// is not sent: a notification outside a request would go on go-sdk's
// standalone stream, which the layer cannot write to.

// statusSink is the connection that created a task, and the last status
// it was told (the CreateTaskResult's "working" at first).
type statusSink struct {
	owner string
	conn  *tasksConn
	// mu orders the notifications of the task: each reads the stored
	// status and sends it under mu.
	mu   sync.Mutex
	last string
}

// watchStatus sends the status changes of task id, created by owner on
// conn, to conn from now on (and at once a change it missed).
func (s *Server) watchStatus(id, owner string, conn *tasksConn) {
	s.mu.Lock()
	s.sinks[id] = &statusSink{owner: owner, conn: conn, last: "working"}
	s.mu.Unlock()
	s.notifyStatus(id)
}

// notifyStatus tells the sink of task id its status, if it changed.
func (s *Server) notifyStatus(id string) {
	s.mu.Lock()
	sk := s.sinks[id]
	s.mu.Unlock()
	if sk == nil {
		return
	}
	sk.mu.Lock()
	defer sk.mu.Unlock()
	rec, err := s.store.Task(context.Background(), s.acct.JID().String(), sk.owner, id)
	if err != nil || rec.Result != nil {
		// Gone, or settled: nothing more to tell after this.
		s.dropSink(id, sk)
	}
	if err != nil || rec.Status == sk.last {
		return
	}
	sk.last = rec.Status
	params, err := json.Marshal(s.taskObject(rec))
	if err != nil {
		return
	}
	_ = sk.conn.Connection.Write(context.Background(), &jsonrpc.Request{Method: "notifications/tasks/status", Params: params})
}

// dropSink forgets sk as the sink of task id.
func (s *Server) dropSink(id string, sk *statusSink) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sinks[id] == sk {
		delete(s.sinks, id)
	}
}

// dropSinks forgets every sink on conn (it closed).
func (s *Server) dropSinks(conn *tasksConn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for id, sk := range s.sinks {
		if sk.conn == conn {
			delete(s.sinks, id)
		}
	}
}
