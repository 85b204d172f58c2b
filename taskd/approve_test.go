package taskd_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"agentgw/db"
	"agentgw/manifest"
	"agentgw/policy"
	"agentgw/runtime/builtin"
	"agentgw/task"
	"agentgw/taskd"

	"mellium.im/xmpp/jid"
)

const guard = "guard@agents.example"

// guardManifest has the builtin echo tool, declaring approvalRequired, and
// the builtin count tool, naming two required permissions.
const guardManifest = `{"manifestSpecVersion":"0","agent":{"jid":"guard@agents.example","name":"guard","version":"1.0"},"tools":[
{"name":"echo","inputSchema":{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]},"urn:xmpp:agent-api:0":{"approvalRequired":true}},
{"name":"count","inputSchema":{"type":"object","properties":{"to":{"type":"integer"}}},"urn:xmpp:agent-api:0":{"supportsProgress":true,"requiredPermissions":["ledger.read","ledger.write"]}}]}`

// registerGuard registers and activates guardManifest.
func registerGuard(t *testing.T, store *db.Store) *manifest.Manifest {
	t.Helper()
	m, err := manifest.Parse([]byte(guardManifest), manifest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	v := db.Version{JID: m.JID, Version: m.Version, Hash: m.Hash, Canonical: m.Canonical, Name: m.Name}
	if _, err := store.RegisterVersion(ctx, v, "admin"); err != nil {
		t.Fatal(err)
	}
	if err := store.Activate(ctx, m.JID, m.Version, &m.Hash); err != nil {
		t.Fatal(err)
	}
	return m
}

func principal(t *testing.T, s string) policy.Principal {
	t.Helper()
	p, err := policy.ParsePrincipal(s)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestApprovalFailsClosed: a tool that declares approvalRequired or
// requiredPermissions is refused, with the bytes of an unauthorized call,
// under an invoke grant of "*" alone, and runs once a [[policy.approve]]
// grant vouches for it.
func TestApprovalFailsClosed(t *testing.T) {
	e := newEnv(t, withOptions(func(o *taskd.Options) {
		o.Runtimes[guard] = builtin.New(builtin.Options{After: func(time.Duration) <-chan time.Time {
			ch := make(chan time.Time, 1)
			ch <- time.Time{}
			return ch
		}})
	}))
	m := registerGuard(t, e.store)
	ctx := context.Background()
	call := func(from, requestID, tool, args string) (taskd.Admission, error) {
		inv := task.Invoke{RequestID: requestID, Tool: tool, APIVersion: m.Version, ManifestHash: m.Hash, Arguments: args}
		return e.svc.Invoke(ctx, e.pol, jid.MustParse(from), jid.MustParse(guard), parseEl(t, marshal(t, inv.TokenReader())))
	}
	// What a caller without any grant gets.
	_, err := call("mallory@evil.example/x", "req-appr-0123456789abcdef00", "echo", `{"text":"hi"}`)
	if !errors.Is(err, task.ErrNotFound) {
		t.Fatalf("stranger: %v", err)
	}
	notFound := errorBytes(t, err)
	refused := func(name, from, requestID, tool, args string) {
		t.Helper()
		_, err := call(from, requestID, tool, args)
		if !errors.Is(err, task.ErrNotFound) {
			t.Fatalf("%s: got %v, want item-not-found", name, err)
		}
		if b := errorBytes(t, err); b != notFound {
			t.Errorf("%s: %s differs from the unauthorized answer %s", name, b, notFound)
		}
	}

	// alice's invoke grant covers every endpoint and tool ("*").
	refused("approvalRequired under \"*\"", alice, "req-appr-0123456789abcdef01", "echo", `{"text":"hi"}`)
	refused("requiredPermissions under \"*\"", alice, "req-appr-0123456789abcdef02", "count", `{"to":1}`)
	// Invalid arguments answer the same: nothing is validated first.
	refused("unapproved, bad arguments", alice, "req-appr-0123456789abcdef03", "echo", `{"text":1}`)

	// An approve grant for echo at this endpoint.
	e.pol.Approve = append(e.pol.Approve, policy.Grant{
		Principals: []policy.Principal{principal(t, bare)}, Endpoints: []string{guard}, Tools: []string{"echo"}})
	adm, err := call(alice, "req-appr-0123456789abcdef04", "echo", `{"text":"approved"}`)
	if err != nil {
		t.Fatalf("approved echo: %v", err)
	}
	adm.Dispatch()
	waitCompleted(t, e, adm.Accepted.TaskID, "approved")
	// It vouches for no permission, and does not name count.
	refused("count, approve grant for echo only", alice, "req-appr-0123456789abcdef05", "count", `{"to":1}`)

	// One of the two permissions is not enough; two grants together are.
	e.pol.Approve = append(e.pol.Approve, policy.Grant{
		Principals: []policy.Principal{principal(t, "example.org")}, AllEndpoints: true, AllTools: true,
		Permissions: []string{"ledger.read"}})
	refused("count, one permission of two", alice, "req-appr-0123456789abcdef06", "count", `{"to":1}`)
	e.pol.Approve = append(e.pol.Approve, policy.Grant{
		Principals: []policy.Principal{principal(t, bare)}, Endpoints: []string{guard}, Tools: []string{"count"},
		Permissions: []string{"ledger.write"}})
	if _, err := call(alice, "req-appr-0123456789abcdef07", "count", `{"to":1}`); err != nil {
		t.Fatalf("count with both permissions vouched for: %v", err)
	}

	// An approve grant adds to an invoke grant; it grants nothing alone.
	e.pol.Approve = append(e.pol.Approve, policy.Grant{
		Principals: []policy.Principal{principal(t, "carol@remote.example")}, AllEndpoints: true, AllTools: true, AllPermissions: true})
	refused("approve grant without an invoke grant", "carol@remote.example/x", "req-appr-0123456789abcdef08", "echo", `{"text":"hi"}`)

	// The demo endpoint's tools declare neither and need no approval.
	e.invoke("req-appr-0123456789abcdef09", "echo", `{"text":"plain"}`)
}

// waitCompleted waits for task id's completed event and checks that its
// result carries text.
func waitCompleted(t *testing.T, e *env, id, text string) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case s := <-e.events:
			if s.ev.TaskID != id || s.ev.Type != task.EventCompleted {
				continue
			}
			if !strings.Contains(string(s.ev.Payload), text) {
				t.Errorf("completed %s", s.ev.Payload)
			}
			return
		case <-deadline:
			t.Fatalf("task %s did not complete", id)
		}
	}
}
