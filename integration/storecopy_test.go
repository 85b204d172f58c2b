package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"agentgw/internal/harness"
	"agentgw/internal/pgtest"
)

// A SQLite deployment moved with `agentgw store copy` to PostgreSQL serves
// the same directory, endpoint, tools and task result from there: a
// gateway on ejabberd's component runs a task on SQLite, stops, its store
// is copied, and a gateway on the same configuration with database.url
// instead answers bob with the same bytes.
func TestStoreCopyToPostgres(t *testing.T) {
	onePass(t)
	need(t)
	pgURL := pgtest.URL(t)
	config, _ := multiEjabberdConfig(t, "store-copy-"+fmt.Sprint(time.Now().UnixNano()))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	w := newTaskWire(t)

	g, err := startGatewayWith(ctx, config)
	if err != nil {
		t.Fatal(err)
	}
	out, errOut, err := runClient(t, w, "bob", harness.RemoteDomain, "-json", "call", multiLedger, ledgerTool, `{"key":"store-copy"}`)
	if err != nil {
		g.stop()
		t.Fatalf("call on SQLite: %v\n%s%s", err, out, errOut)
	}
	taskID := ""
	for _, line := range strings.Split(out, "\n") {
		var v struct {
			Kind   string `json:"kind"`
			TaskID string `json:"taskId"`
		}
		if json.Unmarshal([]byte(line), &v) == nil && v.Kind == "accepted" {
			taskID = v.TaskID
		}
	}
	if taskID == "" {
		g.stop()
		t.Fatalf("no accepted task in:\n%s", out)
	}
	reads := [][]string{
		{"-json", "discover", harness.RemoteComponentDomain},
		{"-json", "describe", multiLedger},
		{"-json", "tools", multiLedger},
		{"-json", "result", multiLedger, taskID},
	}
	read := func(engine string) []string {
		var got []string
		for _, args := range reads {
			out, errOut, err := runClient(t, w, "bob", harness.RemoteDomain, args...)
			if err != nil {
				t.Fatalf("%s: client %v: %v\n%s%s", engine, args, err, out, errOut)
			}
			if strings.TrimSpace(out) == "" {
				t.Fatalf("%s: client %v printed nothing", engine, args)
			}
			got = append(got, out)
		}
		return got
	}
	before := read("SQLite")
	g.stop()

	copied, err := agentgw(ctx, "store", "copy", "-config", config, pgURL)
	if err != nil || !strings.Contains(copied, "counters checked") {
		t.Fatalf("store copy: %v\n%s", err, copied)
	}
	raw, err := os.ReadFile(config)
	if err != nil {
		t.Fatal(err)
	}
	pgConfig := filepath.Join(filepath.Dir(config), "agentgw-pg.toml")
	body := strings.Replace(string(raw), `path = "agentgw.db"`, fmt.Sprintf("url = %q", pgURL), 1)
	if err := os.WriteFile(pgConfig, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	g2, err := startGatewayWith(ctx, pgConfig)
	if err != nil {
		t.Fatal(err)
	}
	defer g2.stop()
	after := read("PostgreSQL")
	for i := range reads {
		if before[i] != after[i] {
			t.Errorf("client %v\non SQLite:\n%s\non PostgreSQL:\n%s", reads[i], before[i], after[i])
		}
	}
}
