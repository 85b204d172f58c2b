package db_test

import (
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestMigrationsReachTheFreshSchema: a database migrated from every frozen
// schema has exactly the tables, indexes and triggers of a fresh one, so
// schema.sql and the migrations cannot drift apart.
func TestMigrationsReachTheFreshSchema(t *testing.T) {
	sqliteOnly(t, "SQLite migrations")
	fresh := filepath.Join(t.TempDir(), "fresh.db")
	openAt(t, fresh)
	want := schemaOf(t, fresh)
	for _, f := range frozenSchemas {
		t.Run(fmt.Sprintf("v%d", f.version), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "old.db")
			execRaw(t, path, readFile(t, f.file))
			openAt(t, path)
			got := schemaOf(t, path)
			for name, sqlText := range want {
				if got[name] != sqlText {
					t.Errorf("%s differs:\nmigrated: %s\n   fresh: %s", name, got[name], sqlText)
				}
			}
			for name := range got {
				if _, ok := want[name]; !ok {
					t.Errorf("%s exists only after migration", name)
				}
			}
		})
	}
}

var (
	sqlComment = regexp.MustCompile(`--[^\n]*`)
	sqlSpace   = regexp.MustCompile(`\s+`)
)

// schemaOf maps each schema object to its normalized CREATE statement.
func schemaOf(t *testing.T, path string) map[string]string {
	t.Helper()
	raw, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	rows, err := raw.Query(`SELECT type, name, sql FROM sqlite_master WHERE sql IS NOT NULL`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var typ, name, text string
		if err := rows.Scan(&typ, &name, &text); err != nil {
			t.Fatal(err)
		}
		text = sqlSpace.ReplaceAllString(sqlComment.ReplaceAllString(text, ""), " ")
		text = strings.ReplaceAll(strings.ReplaceAll(text, "( ", "("), " )", ")")
		out[typ+" "+name] = strings.TrimSpace(text)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func readFile(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
