package integration

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"agentgw/c2s"
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

// quickStart is the README's quick start against a Prosody of its own:
// agentgw init into an empty directory, check-config, the printed Prosody
// snippet pasted as a conf.d file (it reads the secret from init's file),
// then serve, with the written configuration changed by edit (if not nil). It returns
// the environment, init's directory and output, the gateway and alice
// (home.example) logged in.
func quickStart(t *testing.T, ctx context.Context, edit func(string) string) (env *harness.Env, dir, out string, g *gatewayProc, alice *c2s.Client) {
	t.Helper()
	env = harness.StartT(t, harness.Options{})
	if err := env.Register(ctx, "alice", harness.HomeDomain, password); err != nil {
		t.Fatal(err)
	}
	dir = filepath.Join(t.TempDir(), "agentgw")
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
	if edit != nil {
		b, err := os.ReadFile(config)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(config, []byte(edit(string(b))), 0o640); err != nil {
			t.Fatal(err)
		}
	}

	g, err = startGatewayWith(ctx, config)
	if err != nil {
		t.Fatalf("serve: %v", err)
	}
	t.Cleanup(g.stop)
	alice, err = c2s.Dial(ctx, env.ProsodyC2S, jid.MustParse("alice@"+harness.HomeDomain), password)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { alice.Close() })
	return env, dir, out, g, alice
}

// TestInitQuickStart: after the quick start, serve answers disco#info as
// the component the snippet declared. A second init over the same
// directory refuses and changes nothing.
func TestInitQuickStart(t *testing.T) {
	need(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	env, dir, _, g, alice := quickStart(t, ctx, nil)
	raw, err := alice.IQ(ctx, "get", initDomain, discoInfo)
	if err != nil {
		t.Fatalf("disco#info: %v\n%s", err, g.logText())
	}
	for _, want := range []string{`type='result'`, `category='automation'`, `type='agent-gateway'`, `name='Agent Gateway'`} {
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

// scrape returns the metrics the gateway serves.
func scrape(t *testing.T, addr string) string {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("scrape: %v %s", err, resp.Status)
	}
	return string(b)
}

// sample returns the value of the sample whose line starts with series
// (name and labels), or -1.
func sample(text, series string) float64 {
	for _, line := range strings.Split(text, "\n") {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err == nil {
				return f
			}
		}
	}
	return -1
}

// TestMetrics: with [metrics] listen set and JSON logs, the listener comes
// up, and its counters move after a few requests: IQs by kind and outcome
// with their latencies, a task admitted and committed, tasks by state, and
// a reconnect after Prosody restarts.
func TestMetrics(t *testing.T) {
	need(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	port := freePort(t)
	addr := "127.0.0.1:" + strconv.Itoa(port)
	demo := "demo@" + initDomain
	// Logs in JSON; [metrics] and a builtin endpoint alice may call are
	// added.
	extra := fmt.Sprintf(`
[metrics]
listen = %q

[[endpoint]]
jid = %q
runtime = "builtin"

[[policy.visibility]]
principals = [%q]
endpoints = ["*"]

[[policy.invoke]]
principals = [%q]
endpoints = [%q]
tools = ["*"]
`, addr, demo, harness.HomeDomain, harness.HomeDomain, demo)
	env, _, _, g, alice := quickStart(t, ctx, func(c string) string {
		if !strings.Contains(c, "\nformat = \"text\"\n") {
			t.Fatalf("init's [log] has no format = \"text\":\n%s", c)
		}
		return strings.Replace(c, "\nformat = \"text\"\n", "\nformat = \"json\"\n", 1) + extra
	})
	if !strings.Contains(g.logText(), `"msg":"metrics listening"`) {
		t.Fatalf("no metrics listener in the log:\n%s", g.logText())
	}

	before := scrape(t, addr)
	for i := 0; i < 3; i++ {
		if _, err := alice.IQ(ctx, "get", initDomain, discoInfo); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := alice.IQ(ctx, "get", "nobody@"+initDomain, discoInfo); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, suite.bin, "client", "-jid", "alice@"+harness.HomeDomain, "-server", env.ProsodyC2S,
		"call", demo, "echo", `{"text":"counted"}`)
	cmd.Env = append(os.Environ(), "AGENTGW_PASSWORD="+password)
	if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "counted") {
		t.Fatalf("call: %v\n%s\n%s", err, out, g.logText())
	}
	after := scrape(t, addr)

	moved := func(series string, by float64) {
		t.Helper()
		b, a := max(sample(before, series), 0), sample(after, series)
		if a-b < by {
			t.Errorf("%s: %v before, %v after; want it up by %v", series, b, a, by)
		}
	}
	moved(`agentgw_iq_requests_total{kind="disco_info",outcome="result"}`, 3)
	moved(`agentgw_iq_requests_total{kind="disco_info",outcome="item-not-found"}`, 1)
	moved(`agentgw_iq_duration_seconds_count{kind="disco_info"}`, 4)
	moved(`agentgw_iq_requests_total{kind="agent_task",outcome="result"}`, 1)
	moved(`agentgw_task_admissions_total{outcome="accepted"}`, 1)
	moved(`agentgw_task_commits_total`, 1)
	moved(`agentgw_task_commit_batch_size_count`, 1)
	moved(`agentgw_tasks{state="completed"}`, 1)
	if sample(after, "agentgw_stream_reconnects_total") != 0 {
		t.Errorf("reconnects without a lost stream:\n%s", after)
	}

	// A lost component stream is counted once the gateway redials.
	if err := env.RestartProsody(ctx); err != nil {
		t.Fatal(err)
	}
	if err := g.waitUp(ctx); err != nil {
		t.Fatalf("no reconnect: %v\n%s", err, g.logText())
	}
	if n := sample(scrape(t, addr), "agentgw_stream_reconnects_total"); n < 1 {
		t.Errorf("agentgw_stream_reconnects_total = %v after a Prosody restart", n)
	}
}

// TestInitEjabberd: init's ejabberd listener, pasted under listen: of a
// real ejabberd, with the printed one-liner filling in the secret (pointed
// at the harness's ejabberd.yml, and without ejabberdctl reload_config,
// since the harness restarts ejabberd itself): serve comes up as
// ejabberd's component and bob, ejabberd's user, gets its disco#info.
func TestInitEjabberd(t *testing.T) {
	need(t)
	env := harness.StartT(t, harness.Options{Ejabberd: true})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := env.Register(ctx, "bob", harness.RemoteDomain, password); err != nil {
		t.Fatal(err)
	}
	const domain = "gw." + harness.RemoteDomain
	dir := filepath.Join(t.TempDir(), "agentgw")
	server := "127.0.0.1:" + strconv.Itoa(freePort(t))
	out, err := agentgw(ctx, "init", "-domain", domain, "-server", server, dir)
	if err != nil {
		t.Fatalf("init: %v\n%s", err, out)
	}
	section := snippetAfter(t, out, "== ejabberd")
	items, rest, ok := strings.Cut(section, "then put the secret")
	if !ok {
		t.Fatalf("ejabberd section:\n%s", section)
	}
	_, oneLiner, _ := strings.Cut(rest, "\n")
	oneLiner, _, ok = strings.Cut(strings.TrimSpace(oneLiner), " && ejabberdctl reload_config")
	if !ok || !strings.HasPrefix(oneLiner, "sed -i ") {
		t.Fatalf("ejabberd one-liner: %q", oneLiner)
	}
	err = env.AddEjabberdListeners(ctx, items, func(path string) error {
		cmd := strings.Replace(oneLiner, "/etc/ejabberd/ejabberd.yml", path, 1)
		if out, err := exec.CommandContext(ctx, "sh", "-c", cmd).CombinedOutput(); err != nil {
			return fmt.Errorf("%s: %v: %s", cmd, err, out)
		}
		yml, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if strings.Contains(string(yml), "@AGENTGW_SECRET@") {
			return fmt.Errorf("the one-liner left the placeholder")
		}
		return nil
	})
	if err != nil {
		t.Fatalf("ejabberd with the listener: %v", err)
	}

	g, err := startGatewayWith(ctx, filepath.Join(dir, "agentgw.toml"))
	if err != nil {
		t.Fatalf("serve: %v", err)
	}
	t.Cleanup(g.stop)
	bob, err := c2s.Dial(ctx, env.EjabberdC2S, jid.MustParse("bob@"+harness.RemoteDomain), password)
	if err != nil {
		t.Fatal(err)
	}
	defer bob.Close()
	raw, err := bob.IQ(ctx, "get", domain, discoInfo)
	if err != nil {
		t.Fatalf("disco#info: %v\n%s", err, g.logText())
	}
	if !strings.Contains(raw, `type='result'`) || !strings.Contains(raw, `type='agent-gateway'`) {
		t.Errorf("disco#info: %s", raw)
	}
}
