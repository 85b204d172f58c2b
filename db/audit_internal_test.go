package db

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// requestQueries are the statements an IQ or a task transition runs, by
// where they run (docs/BENCHMARKS.md has the audit): each must seek by a
// key (SEARCH) rather than scan a table, so that its cost is O(log n) in
// the store and does not grow with the caller's history. The trigger
// statements are written with ? for new.x and old.x.
var requestQueries = map[string]string{
	"disco#info: active version":         activeVersionQuery,
	"disco#info: active summary":         activeSummaryQuery,
	"directory: count":                   directoryCountAll,
	"directory: page after":              directoryAscAll,
	"directory: page before":             directoryDescAll,
	"search: generation":                 searchGenerationQuery,
	"task command: caller's task":        sqlCallerTask,
	"task: by id":                        sqlTaskByID,
	"task: by request":                   sqlTaskByRequest,
	"admission: lookup":                  sqlAdmission,
	"admission: insert":                  sqlAdmitNew,
	"admission: caller usage":            sqlCallerUsage,
	"transition: update task":            sqlUpdateTask,
	"transition: insert event":           sqlInsertEvent,
	"input: put":                         sqlPutInput,
	"input: by id":                       sqlInputByID,
	"purge: purgeable":                   sqlPurgeableTask,
	"purge: events":                      sqlDeleteEvents,
	"purge: inputs":                      sqlDeleteInputs,
	"purge: task":                        sqlDeleteTask,
	"purge: due":                         sqlDueForPurge,
	"task-state: events":                 sqlTaskEvents,
	"trigger: usage of a task's caller":  `UPDATE caller_usage SET bytes = bytes + 1 WHERE caller = (SELECT caller FROM task WHERE id = ?)`,
	"trigger: usage of a caller":         `UPDATE caller_usage SET finished = finished + 1 WHERE caller = ?`,
	"trigger: endpoint counts":           `UPDATE endpoint_count SET subscriptions = subscriptions - 1 WHERE jid = ?`,
	"register: version quota":            `SELECT EXISTS (SELECT 1 FROM manifest_version WHERE endpoint_jid = ?1 AND version = ?2), COALESCE((SELECT versions FROM endpoint_count WHERE jid = ?1), 0)`,
	"subscribe: endpoint quota":          `SELECT EXISTS (SELECT 1 FROM presence_subscription WHERE endpoint_jid = ?1 AND subscriber = ?2), COALESCE((SELECT subscriptions FROM endpoint_count WHERE jid = ?1), 0)`,
	"subscribe: total quota":             `SELECT value FROM stat WHERE name = 'subscriptions'`,
	"presence probe: subscribed":         `SELECT count(*) FROM presence_subscription WHERE endpoint_jid = ? AND subscriber = ?`,
	"retention: version retained, tasks": `SELECT 1 FROM task WHERE target = ? AND api_version = ? LIMIT 1`,
	"removal: delete version":            `DELETE FROM manifest_version WHERE endpoint_jid = ? AND version = ?`,
}

// placeholders returns an argument for each parameter of q (?N or ?).
func placeholders(q string) []any {
	n := 0
	for _, m := range numbered.FindAllStringSubmatch(q, -1) {
		k, _ := strconv.Atoi(m[1])
		n = max(n, k)
	}
	if n == 0 {
		n = strings.Count(q, "?")
	}
	args := make([]any, n)
	for i := range args {
		args[i] = ""
	}
	return args
}

var numbered = regexp.MustCompile(`\?(\d+)`)

// fullScan matches a plan line that reads a whole table.
var fullScan = regexp.MustCompile(`^SCAN (\w+)$`)

// TestRequestQueriesSeek: no statement on a request path scans a table.
// Run with -v to see every plan.
func TestRequestQueriesSeek(t *testing.T) {
	if os.Getenv("AGENTGW_TEST_ENGINE") == "postgres" {
		t.Skip("SQLite only: EXPLAIN QUERY PLAN")
	}
	s, err := Open(context.Background(), filepath.Join(t.TempDir(), "audit.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for name, q := range requestQueries {
		rows, err := s.writer.Query("EXPLAIN QUERY PLAN "+q, placeholders(q)...)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		var plan []string
		for rows.Next() {
			var id, parent, notused int
			var detail string
			if err := rows.Scan(&id, &parent, &notused, &detail); err != nil {
				t.Fatal(err)
			}
			plan = append(plan, detail)
			if m := fullScan.FindStringSubmatch(detail); m != nil && m[1] != "one" {
				t.Errorf("%s scans %s: %q", name, m[1], plan)
			}
		}
		rows.Close()
		t.Logf("%s: %s", name, strings.Join(plan, "; "))
	}
}
