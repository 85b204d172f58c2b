package harness

import (
	"os"
	"strings"
	"testing"
	"time"
)

// TestProsodyNagle: ProsodyNoNagle writes network_settings = { nagle =
// false } into Prosody's configuration, and SetProsodyNagle switches it
// back and forth, restarting a Prosody that then serves clients.
func TestProsodyNagle(t *testing.T) {
	e := StartT(t, Options{ProsodyNoNagle: true})
	ctx := testCtx(t, 60*time.Second)
	if err := e.Register(ctx, "alice", e.HomeDomain, "alicepw"); err != nil {
		t.Fatal(err)
	}
	config := func() string {
		b, err := os.ReadFile(e.prosodyPaths.config)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	const off = "network_settings = { nagle = false }"
	for _, step := range []struct {
		on   bool
		want bool // the config has the line
	}{{false, true}, {true, false}, {true, false}, {false, true}} {
		if err := e.SetProsodyNagle(ctx, step.on); err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(config(), off); got != step.want {
			t.Fatalf("nagle on=%v: config has %q: %v\n%s", step.on, off, got, config())
		}
		alice := dialClient(ctx, t, e.ProsodyC2S, "alice@home.example", "alicepw")
		mustIQ(ctx, t, alice, "get", e.HomeDomain, discoInfo, `type='result'`)
		alice.Close()
	}
}
