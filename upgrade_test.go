package main

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"mellium.im/xmpp/jid"

	"agentgw/db"
	"agentgw/mcpface"
	"agentgw/policy"
)

// writeFixtures makes the missing testdata/upgrade databases: go test -run
// TestUpgradeKeepsData -upgrade.write . — do it before a migration is
// appended, while db/testdata/schema-vN.sql is the schema that shipped.
var writeFixtures = flag.Bool("upgrade.write", false, "write the missing testdata/upgrade/agentgw-vN.db fixtures")

// The fixtures' data beyond db/testdata's sample rows: tasks, their events
// and an input, inserted with the SQL of the schema that holds them (the
// task tables are the same from version 4 on).
const fixtureTasksSQL = `
INSERT INTO task (id, caller, target, request_id, api_version, state, terminal, revision, next_wake, doc) VALUES
	('t-running', 'alice@example.com', 'weather@agents.example', 'req-1', '1.1.0', 'working', 0, 1, 1700000600000,
	 CAST('{"id":"t-running","state":"working"}' AS BLOB)),
	('t-done', 'bob@example.com', 'weather@agents.example', 'req-2', '1.0.0', 'completed', 1, 2, 4102444800000,
	 CAST('{"id":"t-done","state":"completed"}' AS BLOB));
INSERT INTO task_event (task_id, revision, event_id, type, payload) VALUES
	('t-running', 1, 'ev-1', 'status', CAST('{"state":"working"}' AS BLOB)),
	('t-done', 1, 'ev-2', 'status', CAST('{"state":"working"}' AS BLOB)),
	('t-done', 2, 'ev-3', 'result', CAST('{"text":"sunny"}' AS BLOB));
INSERT INTO task_input (task_id, request_id, doc) VALUES
	('t-running', 'in-1', CAST('{"answer":"yes"}' AS BLOB));
`

// firstTaskSchema is the schema version that added the task tables.
const firstTaskSchema = 4

// mcpStoreV1SQL is version 1 of `agentgw mcp`'s message store
// (mcpface/store.go) as it shipped, with two queued messages and a drop
// count: the SQL that version ran.
const mcpStoreV1SQL = `
CREATE TABLE message (
	seq         INTEGER PRIMARY KEY AUTOINCREMENT,
	account     TEXT    NOT NULL CHECK (account <> ''),
	id          TEXT    NOT NULL UNIQUE CHECK (id <> ''),
	received_at INTEGER NOT NULL,
	message     TEXT    NOT NULL
) STRICT;
CREATE INDEX message_by_account ON message (account, seq);
CREATE TABLE dropped (
	account TEXT    PRIMARY KEY,
	count   INTEGER NOT NULL
) STRICT;
INSERT INTO message (account, id, received_at, message) VALUES
	('alice@example.com', 'm-1', 1700000000000, '{"Success":true,"Message":"","From":"bob@example.com/x","FromBareJid":"bob@example.com","Body":"first"}'),
	('alice@example.com', 'm-2', 1700000001000, '{"Success":true,"Message":"","From":"carol@example.com/y","FromBareJid":"carol@example.com","Body":"second"}');
INSERT INTO dropped (account, count) VALUES ('alice@example.com', 3);
PRAGMA user_version = 1;
`

var fixtureName = regexp.MustCompile(`^agentgw-v([0-9]+)\.db$`)

// TestUpgradeKeepsData opens a database written by every earlier schema
// version (testdata/upgrade/agentgw-vN.db, or, for a version with no stored
// file yet, one made from db/testdata/schema-vN.sql, the SQL it ran) with
// today's code, and shows that the endpoints, their versions and hashes,
// what the grants let a caller see and invoke, the tasks with their events
// and inputs, and the queued messages of `agentgw mcp` all survive, and
// that the old file was backed up first. It asks db for the current schema
// version, so a migration appended later is covered once its frozen schema
// is in db/testdata.
func TestUpgradeKeepsData(t *testing.T) {
	current := currentSchema(t)
	found := map[int]string{}
	entries, err := os.ReadDir("testdata/upgrade")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if m := fixtureName.FindStringSubmatch(e.Name()); m != nil {
			v, _ := strconv.Atoi(m[1])
			found[v] = filepath.Join("testdata/upgrade", e.Name())
		}
	}
	for v := 1; v < current; v++ {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) {
			fixture, ok := found[v]
			if !ok {
				fixture = makeFixture(t, v)
			}
			path := filepath.Join(t.TempDir(), "agentgw.db")
			copyFile(t, fixture, path)
			if got := userVersionOf(t, path); got != v {
				t.Fatalf("%s has schema version %d, want %d", fixture, got, v)
			}
			checkUpgraded(t, path, v, current)
		})
	}
	for v := range found {
		if v >= current {
			t.Errorf("testdata/upgrade has a fixture for schema version %d, but this binary writes %d", v, current)
		}
	}
}

// currentSchema is the schema version today's code writes: that of a new
// database.
func currentSchema(t *testing.T) int {
	t.Helper()
	path := filepath.Join(t.TempDir(), "new.db")
	s, err := db.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	return userVersionOf(t, path)
}

// makeFixture builds the version-v database from db/testdata's frozen SQL
// and the task rows, and with -upgrade.write stores it in testdata/upgrade.
func makeFixture(t *testing.T, v int) string {
	t.Helper()
	frozen := fmt.Sprintf("db/testdata/schema-v%d.sql", v)
	sqlText, err := os.ReadFile(frozen)
	if err != nil {
		t.Fatalf("no testdata/upgrade/agentgw-v%d.db and no %s to make it from: freeze each schema before its migration is appended", v, frozen)
	}
	dest := filepath.Join(t.TempDir(), fmt.Sprintf("agentgw-v%d.db", v))
	if *writeFixtures {
		dest = fmt.Sprintf("testdata/upgrade/agentgw-v%d.db", v)
	} else {
		t.Logf("no testdata/upgrade/agentgw-v%d.db: made from %s (go test -run TestUpgradeKeepsData -upgrade.write . stores it)", v, frozen)
	}
	script := string(sqlText)
	if v >= firstTaskSchema {
		// Before the PRAGMA that ends every frozen file.
		script = strings.Replace(script, fmt.Sprintf("PRAGMA user_version = %d;", v), fixtureTasksSQL+fmt.Sprintf("PRAGMA user_version = %d;", v), 1)
	}
	execSQL(t, dest, script)
	// One file, no -wal beside it, as a stopped gateway leaves it.
	execSQL(t, dest, "PRAGMA journal_mode = DELETE; VACUUM;")
	return dest
}

// checkUpgraded opens the version-from database at path with today's
// store and checks everything it held.
func checkUpgraded(t *testing.T, path string, from, current int) {
	t.Helper()
	ctx := context.Background()
	s, err := db.Open(ctx, path)
	if err != nil {
		t.Fatalf("open a version-%d database: %v", from, err)
	}
	defer s.Close()
	m := s.Migrated()
	if m.From != from || m.To != current || m.Backup != fmt.Sprintf("%s.pre-%d", path, current) {
		t.Errorf("Migrated() = %+v", m)
	}
	if got := userVersionOf(t, m.Backup); got != from {
		t.Errorf("the backup has schema version %d, want %d", got, from)
	}

	// Endpoints, versions, hashes.
	weather, err := s.Status(ctx, "weather@agents.example")
	if err != nil {
		t.Fatal(err)
	}
	if weather.Origin != db.OriginSelf || weather.Active != "1.1.0" || len(weather.Versions) != 2 {
		t.Errorf("weather = %+v", weather)
	}
	echo, err := s.Status(ctx, "echo@agents.example")
	if err != nil || echo.Origin != db.OriginBuiltin || echo.Active != "" || len(echo.Versions) != 1 {
		t.Errorf("echo = %+v, %v", echo, err)
	}
	for _, ev := range [][2]string{{"weather@agents.example", "1.0.0"}, {"weather@agents.example", "1.1.0"}, {"echo@agents.example", "0.1.0"}} {
		v, err := s.Version(ctx, ev[0], ev[1])
		if err != nil {
			t.Errorf("%s %s: %v", ev[0], ev[1], err)
			continue
		}
		if v.Hash != sha256.Sum256(v.Canonical) {
			t.Errorf("%s %s: the stored hash is not the SHA-256 of the canonical bytes", ev[0], ev[1])
		}
		if !strings.Contains(string(v.Canonical), `"version":"`+ev[1]+`"`) {
			t.Errorf("%s %s: canonical = %s", ev[0], ev[1], v.Canonical)
		}
	}

	// Grants' effects: a domain granted weather sees it listed and may
	// invoke it; another domain sees an empty directory.
	pol := &policy.Policy{
		Visibility: []policy.Grant{{Principals: []policy.Principal{{Domain: "example.com"}}, Endpoints: []string{"weather@agents.example"}}},
		Invoke:     []policy.Grant{{Principals: []policy.Principal{{Domain: "example.com"}}, Endpoints: []string{"weather@agents.example"}, AllTools: true}},
	}
	for _, c := range []struct {
		requester string
		items     int
		invoke    bool
	}{{"alice@example.com/phone", 1, true}, {"mallory@evil.example/x", 0, false}} {
		req := jid.MustParse(c.requester)
		sc := pol.VisibleScope(req)
		page, err := s.Directory(ctx, db.Scope{All: sc.All, JIDs: sc.JIDs}, db.Page{Max: 10})
		if err != nil {
			t.Fatal(err)
		}
		if page.Count != c.items || len(page.Items) != c.items || (c.items == 1 && page.Items[0].JID != "weather@agents.example") {
			t.Errorf("%s's directory = %+v", c.requester, page)
		}
		if got := pol.CanInvoke(req, "weather@agents.example", "forecast"); got != c.invoke {
			t.Errorf("%s may invoke weather: %v, want %v", c.requester, got, c.invoke)
		}
	}
	subs, err := s.Subscribers(ctx, "weather@agents.example")
	if err != nil || strings.Join(subs, " ") != "alice@example.com bob@example.com" {
		t.Errorf("subscribers = %q, %v", subs, err)
	}

	if from < firstTaskSchema {
		return
	}
	// Tasks, their events and inputs.
	running, err := s.TaskByRequest(ctx, "alice@example.com", "weather@agents.example", "req-1")
	if err != nil || running.ID != "t-running" || running.Terminal || running.APIVersion != "1.1.0" || string(running.Doc) != `{"id":"t-running","state":"working"}` {
		t.Errorf("running task = %+v, %v", running, err)
	}
	live, err := s.LiveTasks(ctx)
	if err != nil || len(live) != 1 || live[0].ID != "t-running" {
		t.Errorf("live tasks = %+v, %v", live, err)
	}
	done, err := s.Task(ctx, "t-done")
	if err != nil || !done.Terminal || done.Revision != 2 || done.State != "completed" {
		t.Errorf("done task = %+v, %v", done, err)
	}
	events, err := s.TaskEvents(ctx, "t-done")
	if err != nil || len(events) != 2 || events[1].Type != "result" || string(events[1].Payload) != `{"text":"sunny"}` {
		t.Errorf("events = %+v, %v", events, err)
	}
	// A version a task pinned cannot be removed.
	if err := s.RemoveVersion(ctx, "weather@agents.example", "1.0.0"); err == nil {
		t.Errorf("removed version 1.0.0, which t-done pinned")
	}
}

// TestUpgradeKeepsQueuedMessages opens each earlier version of `agentgw
// mcp`'s message store (testdata/upgrade/mcp-vN.db) with today's code: the
// queued messages, oldest first, and the drop count are still there.
func TestUpgradeKeepsQueuedMessages(t *testing.T) {
	fixtures, _ := filepath.Glob("testdata/upgrade/mcp-v*.db")
	if len(fixtures) == 0 {
		fixtures = []string{makeMCPFixture(t)}
	}
	sort.Strings(fixtures)
	for _, fixture := range fixtures {
		t.Run(filepath.Base(fixture), func(t *testing.T) {
			ctx := context.Background()
			path := filepath.Join(t.TempDir(), "mcp.db")
			copyFile(t, fixture, path)
			s, err := mcpface.OpenStore(ctx, path)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			msgs, err := s.List(ctx, "alice@example.com")
			if err != nil {
				t.Fatal(err)
			}
			if len(msgs) != 2 || msgs[0].ID != "m-1" || msgs[0].Message.Body != "first" ||
				msgs[1].ID != "m-2" || msgs[1].Message.FromBareJid != "carol@example.com" {
				t.Errorf("queued messages = %+v", msgs)
			}
			if n, err := s.Dropped(ctx, "alice@example.com"); err != nil || n != 3 {
				t.Errorf("dropped = %d, %v", n, err)
			}
		})
	}
}

// TestUpgradeKeepsMCPTasks opens testdata/upgrade/mcp-v2.db, a store that
// the code of version 2 wrote (main at abc0cfb: mcp-v1.db opened, five
// messages pushed to bob under a bound of three, two to carol under a byte
// bound, three MCP tasks created and updated, one completed with its
// result), with today's code. Every message of every account, in order,
// every drop count and every task, its hash now 32 bytes, are what the file
// held, read with plain SQL before the upgrade; and the file was backed up
// first.
func TestUpgradeKeepsMCPTasks(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "mcp.db")
	copyFile(t, "testdata/upgrade/mcp-v2.db", path)
	if v := userVersionOf(t, path); v != 2 {
		t.Fatalf("fixture user_version = %d, want 2", v)
	}
	type msg struct{ account, id, body string }
	type taskRow struct {
		id, owner, account, hash, status, state string
		revision                                int64
		result                                  sql.NullString
	}
	var msgs []msg
	drops := map[string]int64{}
	var tasks []taskRow
	raw, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := raw.Query("SELECT account, id, json_extract(message, '$.Body') FROM message ORDER BY account, seq")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var m msg
		if err := rows.Scan(&m.account, &m.id, &m.body); err != nil {
			t.Fatal(err)
		}
		msgs = append(msgs, m)
	}
	rows.Close()
	rows, err = raw.Query("SELECT account, count FROM dropped")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var a string
		var n int64
		if err := rows.Scan(&a, &n); err != nil {
			t.Fatal(err)
		}
		drops[a] = n
	}
	rows.Close()
	rows, err = raw.Query("SELECT id, owner, account, hash, status, xmpp_state, revision, result FROM mcp_task ORDER BY id")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var r taskRow
		if err := rows.Scan(&r.id, &r.owner, &r.account, &r.hash, &r.status, &r.state, &r.revision, &r.result); err != nil {
			t.Fatal(err)
		}
		tasks = append(tasks, r)
	}
	rows.Close()
	raw.Close()
	// What the fixture was written with, so that an emptied file fails.
	if len(msgs) != 6 || len(tasks) != 3 || drops["alice@example.com"] != 3 || drops["bob@example.com"] != 2 || drops["carol@example.com"] != 1 {
		t.Fatalf("fixture holds %d messages, %d tasks, drops %v", len(msgs), len(tasks), drops)
	}

	s, err := mcpface.OpenStore(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// The tasks are retained until 2100; the clock is the fixture's.
	s.Now = func() time.Time { return time.UnixMilli(1_800_000_000_000) }
	var got []msg
	for _, a := range []string{"alice@example.com", "bob@example.com", "carol@example.com"} {
		l, err := s.List(ctx, a)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range l {
			got = append(got, msg{a, m.ID, m.Message.Body})
		}
		if n, err := s.Dropped(ctx, a); err != nil || n != drops[a] {
			t.Errorf("%s: dropped = %d, %v; the file held %d", a, n, err, drops[a])
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(msgs) {
		t.Errorf("messages after the upgrade:\n%v\nthe file held:\n%v", got, msgs)
	}
	for _, want := range tasks {
		r, err := s.Task(ctx, want.account, want.owner, want.id)
		if err != nil {
			t.Errorf("task %s: %v", want.id, err)
			continue
		}
		if r.Hash.Base64() != want.hash || r.Status != want.status || r.XMPPState != want.state || r.Revision != want.revision ||
			string(r.Result) != want.result.String || (r.Result == nil) == want.result.Valid {
			t.Errorf("task %s = %+v, the file held %+v", want.id, r, want)
		}
	}
	if u, err := s.UnsettledTasks(ctx, "alice@example.com"); err != nil || len(u) != 1 || u[0].ID != "mcptask-working" {
		t.Errorf("alice's unsettled tasks = %+v, %v", u, err)
	}
	if v := userVersionOf(t, path); v <= 2 {
		t.Errorf("user_version after the upgrade = %d", v)
	}
	// The copy taken before the migration is the version-2 file.
	backups, _ := filepath.Glob(path + ".pre-*")
	if len(backups) != 1 || userVersionOf(t, backups[0]) != 2 || s.Migrated().Backup != backups[0] || s.Migrated().From != 2 {
		t.Errorf("backups %v, want one of version 2; Migrated = %+v", backups, s.Migrated())
	}
}

// makeMCPFixture builds mcp-v1.db from mcpStoreV1SQL, into testdata/upgrade
// with -upgrade.write.
func makeMCPFixture(t *testing.T) string {
	t.Helper()
	dest := filepath.Join(t.TempDir(), "mcp-v1.db")
	if *writeFixtures {
		dest = "testdata/upgrade/mcp-v1.db"
	}
	execSQL(t, dest, mcpStoreV1SQL)
	execSQL(t, dest, "PRAGMA journal_mode = DELETE; VACUUM;")
	return dest
}

func execSQL(t *testing.T, path, script string) {
	t.Helper()
	raw, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if _, err := raw.Exec(script); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

func userVersionOf(t *testing.T, path string) int {
	t.Helper()
	raw, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	var v int
	if err := raw.QueryRow("PRAGMA user_version").Scan(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

func copyFile(t *testing.T, src, dest string) {
	t.Helper()
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(dest, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}
