package taskd_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"agentgw/surface"
	"agentgw/task"
	"agentgw/taskd"

	"mellium.im/xmpp/jid"
)

// TestFinishedTasksQuota: once a caller keeps FinishedTasksPerCaller settled
// tasks, its next new invocation gets <resource-constraint/>; a replay of
// a stored one still returns its task, and nothing stored is lost.
func TestFinishedTasksQuota(t *testing.T) {
	e := newEnv(t, withOptions(func(o *taskd.Options) { o.FinishedTasksPerCaller = 2 }))
	var ids []string
	for i := 0; i < 2; i++ {
		acc := e.invoke(fmt.Sprintf("req-quota-0123456789abcdef%d", i), "echo", `{"text":"x"}`)
		e.next(acc.TaskID, 1, task.EventStatus)
		e.next(acc.TaskID, 2, task.EventCompleted)
		ids = append(ids, acc.TaskID)
	}
	ctx := context.Background()
	_, err := e.svc.Invoke(ctx, surface.Request{Policy: e.pol, From: jid.MustParse(alice), To: jid.MustParse(demo), Payload: e.invokeEl("req-quota-0123456789abcdef9", "echo", `{"text":"x"}`, time.Time{})})
	if !errors.Is(err, task.ErrResourceConstraint) {
		t.Fatalf("invocation past the finished-task quota: %v", err)
	}
	// The replay of a stored request is answered, not refused.
	adm, err := e.svc.Invoke(ctx, surface.Request{Policy: e.pol, From: jid.MustParse(alice), To: jid.MustParse(demo), Payload: e.invokeEl("req-quota-0123456789abcdef0", "echo", `{"text":"x"}`, time.Time{})})
	if err != nil || adm.Accepted.TaskID != ids[0] || adm.Dispatch != nil {
		t.Errorf("replay past the quota: %+v %v", adm.Accepted, err)
	}
	for _, id := range ids {
		if st := e.state(id); st.State != task.StateCompleted {
			t.Errorf("stored task %s is %s", id, st.State)
		}
	}
	e.quiet()
}

// TestStoredBytesQuota: once a caller's tasks keep StoredBytesPerCaller bytes,
// its next new invocation gets <resource-constraint/>.
func TestStoredBytesQuota(t *testing.T) {
	e := newEnv(t, withOptions(func(o *taskd.Options) { o.StoredBytesPerCaller = 4096 }))
	big := `{"text":"` + strings.Repeat("x", 3000) + `"}`
	acc := e.invoke("req-bytes-0123456789abcdef0", "echo", big)
	e.next(acc.TaskID, 1, task.EventStatus)
	e.next(acc.TaskID, 2, task.EventCompleted)
	u, err := e.store.CallerUsage(context.Background(), "alice@example.org")
	if err != nil || u.Bytes < 4096 || u.Finished != 1 {
		t.Fatalf("usage %+v %v", u, err)
	}
	_, err = e.svc.Invoke(context.Background(), surface.Request{Policy: e.pol, From: jid.MustParse(alice), To: jid.MustParse(demo), Payload: e.invokeEl("req-bytes-0123456789abcdef1", "echo", `{"text":"x"}`, time.Time{})})
	if !errors.Is(err, task.ErrResourceConstraint) {
		t.Fatalf("invocation past the stored-bytes quota: %v", err)
	}
	if st := e.state(acc.TaskID); st.State != task.StateCompleted {
		t.Errorf("stored task is %s", st.State)
	}
}
