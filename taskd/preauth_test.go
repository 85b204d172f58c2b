package taskd_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"testing"
	"time"

	"agentgw/internal/pgtest"
	"agentgw/surface"
	"agentgw/task"

	"mellium.im/xmpp/jid"
)

// TestCommandsAuthorizedBeforeTheWriter: while another process holds the
// database's write lock, a <cancel/> or <provide-input/> from someone who
// is not the task's caller is still answered <item-not-found/> at once:
// it is authorized with a read and never queues for the single writer.
func TestCommandsAuthorizedBeforeTheWriter(t *testing.T) {
	pgtest.SQLiteOnly(t, "holds SQLite's write lock from a raw connection (db's TestPostgresWritesHoldTheLock covers PostgreSQL's)")
	e := newEnv(t)
	acc := e.invoke("req-count-0123456789abcdef0", "count", `{"to":5,"interval_ms":100}`)
	e.next(acc.TaskID, 1, task.EventStatus)

	other, err := sql.Open("sqlite", e.path)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	conn, err := other.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(context.Background(), "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	defer conn.ExecContext(context.Background(), "ROLLBACK")

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	mallory, to := jid.MustParse("mallory@evil.example/x"), jid.MustParse(demo)
	cancelEl := parseEl(t, fmt.Sprintf(`<cancel xmlns='urn:xmpp:agent-task:0' task-id='%s' expected-revision='1'/>`, acc.TaskID))
	if _, err := e.svc.Cancel(ctx, surface.Request{From: mallory, To: to, Payload: cancelEl}); !errors.Is(err, task.ErrNotFound) {
		t.Errorf("cancel by another caller under a held write lock: %v", err)
	}
	input := parseEl(t, fmt.Sprintf(`<provide-input xmlns='urn:xmpp:agent-task:0' task-id='%s' request-id='req-x-0123456789abcdef012345' expected-revision='1'><input media-type='application/json'>{}</input></provide-input>`, acc.TaskID))
	if _, err := e.svc.ProvideInput(ctx, surface.Request{From: mallory, To: to, Payload: input}); !errors.Is(err, task.ErrNotFound) {
		t.Errorf("input by another caller under a held write lock: %v", err)
	}
	// The same for a task that does not exist, and at the wrong endpoint.
	ghost := parseEl(t, `<cancel xmlns='urn:xmpp:agent-task:0' task-id='task-00000000000000000000000000000000' expected-revision='1'/>`)
	if _, err := e.svc.Cancel(ctx, surface.Request{From: jid.MustParse(alice), To: to, Payload: ghost}); !errors.Is(err, task.ErrNotFound) {
		t.Errorf("cancel of a missing task: %v", err)
	}
	if _, err := e.svc.Cancel(ctx, surface.Request{From: jid.MustParse(alice), To: jid.MustParse("other@agents.example"), Payload: cancelEl}); !errors.Is(err, task.ErrNotFound) {
		t.Errorf("cancel at another endpoint: %v", err)
	}
	if ctx.Err() != nil {
		t.Error("a refused command waited for the writer")
	}
}
