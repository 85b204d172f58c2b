package db_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"agentgw/db"
)

// TestOpenUnreachablePostgres: a server that cannot be reached is an error
// that names the URL without its password.
func TestOpenUnreachablePostgres(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, u := range []string{
		"postgres://agentgw:s3cret-pw@127.0.0.1:1/agentgw?sslmode=disable&connect_timeout=5",
		"postgresql://127.0.0.1:1/agentgw?sslmode=disable&password=s3cret-pw&connect_timeout=5",
	} {
		s, err := db.Open(ctx, u)
		if err == nil {
			s.Close()
			t.Fatalf("Open(%s) succeeded", db.RedactURL(u))
		}
		msg := err.Error()
		if strings.Contains(msg, "s3cret-pw") {
			t.Errorf("the error holds the password: %s", msg)
		}
		if !strings.Contains(msg, "127.0.0.1:1/agentgw") {
			t.Errorf("the error does not name the server: %s", msg)
		}
	}
}

// TestPostgresCommitsDurably: every connection of a PostgreSQL store
// commits synchronously, whatever the server's default, and the readers
// cannot write.
func TestPostgresCommitsDurably(t *testing.T) {
	if !onPostgres() {
		t.Skip("PostgreSQL only")
	}
	ctx := context.Background()
	s, _ := newStore(t)
	var v string
	if err := db.WriterPool(s).QueryRowContext(ctx, "SHOW synchronous_commit").Scan(&v); err != nil || v != "on" {
		t.Errorf("writer: synchronous_commit = %q (%v), want on", v, err)
	}
	if err := db.ReaderPool(s).QueryRowContext(ctx, "SHOW default_transaction_read_only").Scan(&v); err != nil || v != "on" {
		t.Errorf("reader: default_transaction_read_only = %q (%v), want on", v, err)
	}
}
