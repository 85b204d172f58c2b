package mcpface

import (
	"fmt"
	"strings"
	"testing"

	"agentgw/agentclient"
	"agentgw/wire"

	"mellium.im/xmpp/jid"
)

// eventRaw hands raw to event as the account's session does: parsed, with
// its task ID.
func (g *agents) eventRaw(raw string) {
	el, err := wire.Parse(raw)
	if err != nil {
		panic(err)
	}
	id, _ := agentclient.IsLifecycleMessage(el)
	g.event(el, id, len(raw))
}

func lifecycle(from, taskID string, pad int) string {
	return fmt.Sprintf(`<message xmlns="jabber:client" from=%q to="alice@example.org/mcp"><event xmlns="urn:xmpp:agent-task:0" task-id=%q/><body>%s</body></message>`,
		from, taskID, strings.Repeat("x", pad))
}

// TestUnclaimedEventsBounded: early lifecycle events are kept only from an
// endpoint with a call in flight, and within maxUnclaimedBytes in all.
func TestUnclaimedEventsBounded(t *testing.T) {
	g := &agents{following: map[string]chan wire.Element{}, unclaimed: map[string][]taskEvent{}, inflight: map[string]int{}}
	// Anyone's events, with no call in flight: nothing is kept.
	for i := range 100 {
		g.eventRaw(lifecycle("mallory@evil.example/x", fmt.Sprintf("t%d", i), 1000))
	}
	if len(g.unclaimed) != 0 || g.ubytes != 0 {
		t.Fatalf("kept %d tasks, %d bytes from a stranger", len(g.unclaimed), g.ubytes)
	}
	release := g.expect(jid.MustParse("demo@agents.example"))
	g.eventRaw(lifecycle("mallory@evil.example/x", "t-evil", 10))
	g.eventRaw(lifecycle("demo@agents.example/a", "t-ours", 10))
	if len(g.unclaimed) != 1 || len(g.unclaimed["t-ours"]) != 1 {
		t.Fatalf("unclaimed %v", g.unclaimed)
	}
	// The early event is counted as the bytes it was received as.
	if e := g.unclaimed["t-ours"][0]; e.size != len(lifecycle("demo@agents.example/a", "t-ours", 10)) {
		t.Fatalf("early event of %d bytes", e.size)
	}
	ev, stop := g.follow("t-ours")
	if len(ev) != 1 || g.ubytes != 0 {
		t.Fatalf("follow: %d early events, %d bytes left", len(ev), g.ubytes)
	}
	// The follower gets the element the session parsed, not text to parse again.
	if e := <-ev; e.Start.Name.Local != "message" {
		t.Fatalf("early event %v", e.Start.Name)
	}
	stop()
	// Even the endpoint called stays within the byte bound.
	for i := range maxUnclaimedTasks + 50 {
		for range 4 {
			g.eventRaw(lifecycle("demo@agents.example/a", fmt.Sprintf("t%d", i), 16<<10))
		}
	}
	total := 0
	for _, evs := range g.unclaimed {
		for _, ev := range evs {
			total += ev.size
		}
	}
	if total > maxUnclaimedBytes || total != g.ubytes || len(g.order) != len(g.unclaimed) {
		t.Fatalf("kept %d bytes (counted %d), order %d, tasks %d", total, g.ubytes, len(g.order), len(g.unclaimed))
	}
	release()
	release() // once only
	if len(g.inflight) != 0 {
		t.Fatalf("inflight %v", g.inflight)
	}
	g.eventRaw(lifecycle("demo@agents.example/a", "t-late", 10))
	if _, ok := g.unclaimed["t-late"]; ok {
		t.Fatal("kept an event with no call in flight")
	}
}
