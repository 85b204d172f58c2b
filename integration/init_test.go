package integration

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"agentgw/client"
	"agentgw/internal/harness"

	"mellium.im/xmpp/jid"
)

// initDomain is the component domain of TestInitQuickStart: a new one, so
// that the snippet init prints declares it on a Prosody that knows nothing
// of it.
const initDomain = "gw.home.example"

// snippetAfter returns the lines that follow the line starting with header
// in out, up to the next blank line.
func snippetAfter(t *testing.T, out, header string) string {
	t.Helper()
	_, rest, ok := strings.Cut(out, "\n"+header)
	if !ok {
		t.Fatalf("no %q section in:\n%s", header, out)
	}
	_, rest, _ = strings.Cut(rest, "\n")
	body, _, _ := strings.Cut(rest, "\n\n")
	return body + "\n"
}

// TestInitQuickStart is the README's quick start against a Prosody of its
// own: agentgw init into an empty directory, check-config, the printed
// Prosody snippet pasted as a conf.d file (it reads the secret from init's
// file), then serve comes up as the component and answers disco#info. A
// second init over the same directory refuses and changes nothing.
func TestInitQuickStart(t *testing.T) {
	need(t)
	env := harness.StartT(t, harness.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := env.Register(ctx, "alice", harness.HomeDomain, password); err != nil {
		t.Fatal(err)
	}

	dir := filepath.Join(t.TempDir(), "agentgw")
	out, err := agentgw(ctx, "init", "-domain", initDomain, "-server", env.ComponentAddr, dir)
	if err != nil {
		t.Fatalf("init: %v\n%s", err, out)
	}
	secret, err := os.ReadFile(filepath.Join(dir, "component.secret"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out, strings.TrimSpace(string(secret))) {
		t.Fatalf("init printed the secret")
	}
	config := filepath.Join(dir, "agentgw.toml")
	if out, err := agentgw(ctx, "check-config", "-config", config); err != nil {
		t.Fatalf("check-config: %v\n%s", err, out)
	}

	snippet := snippetAfter(t, out, "== Prosody")
	// The harness listens on a random port of its own address: the snippet
	// must say so, in its global part.
	_, port, _ := strings.Cut(env.ComponentAddr, ":")
	for _, want := range []string{"component_ports = { " + port + " }", `Component "` + initDomain + `"`} {
		if !strings.Contains(snippet, want) {
			t.Fatalf("Prosody snippet lacks %q:\n%s", want, snippet)
		}
	}
	if _, err := env.IncludeProsodyConfig(ctx, initDomain+".cfg.lua", snippet); err != nil {
		t.Fatalf("prosody with the snippet: %v", err)
	}

	g, err := startGatewayWith(ctx, config)
	if err != nil {
		t.Fatalf("serve: %v", err)
	}
	t.Cleanup(g.stop)
	alice, err := client.Dial(ctx, env.ProsodyC2S, jid.MustParse("alice@"+harness.HomeDomain), password)
	if err != nil {
		t.Fatal(err)
	}
	defer alice.Close()
	raw, err := alice.IQ(ctx, "get", initDomain, discoInfo)
	if err != nil {
		t.Fatalf("disco#info: %v\n%s", err, g.logText())
	}
	for _, want := range []string{`type="result"`, `category="automation"`, `type="agent-gateway"`, `name="Agent Gateway"`} {
		if !strings.Contains(raw, want) {
			t.Errorf("disco#info lacks %s: %s", want, raw)
		}
	}

	before := map[string]string{}
	for _, f := range []string{"agentgw.toml", "component.secret"} {
		b, _ := os.ReadFile(filepath.Join(dir, f))
		before[f] = string(b)
	}
	if out, err := agentgw(ctx, "init", "-domain", initDomain, "-server", env.ComponentAddr, dir); err == nil || !strings.Contains(out, "already exists") {
		t.Fatalf("init over a config: %v\n%s", err, out)
	}
	for f, want := range before {
		if b, _ := os.ReadFile(filepath.Join(dir, f)); string(b) != want {
			t.Errorf("%s changed by the refused init", f)
		}
	}
}
