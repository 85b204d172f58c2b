// Package xsdtest validates XML documents that tests emit against an XML
// Schema with xmllint (libxml2-utils). The documents of one test are
// batched and checked in one xmllint run when the test ends. Without
// xmllint the check is skipped with a log line, unless
// AGENTGW_REQUIRE_SERVERS is set (as CI sets it): then the test fails.
package xsdtest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

var state struct {
	once sync.Once
	path string
	mu   sync.Mutex
	docs map[testing.TB]map[string][]string // by test, by schema
}

// Check queues doc for validation against the schema file when t ends.
func Check(t testing.TB, schema, doc string) {
	t.Helper()
	state.once.Do(func() { state.path, _ = exec.LookPath("xmllint") })
	if state.path == "" {
		if os.Getenv("AGENTGW_REQUIRE_SERVERS") != "" {
			t.Fatal("xmllint is not installed (libxml2-utils) and AGENTGW_REQUIRE_SERVERS is set")
		}
		t.Log("xmllint is not installed: XSD validation skipped")
		return
	}
	state.mu.Lock()
	defer state.mu.Unlock()
	if state.docs == nil {
		state.docs = map[testing.TB]map[string][]string{}
	}
	if _, ok := state.docs[t]; !ok {
		state.docs[t] = map[string][]string{}
		t.Cleanup(func() {
			state.mu.Lock()
			bySchema := state.docs[t]
			delete(state.docs, t)
			state.mu.Unlock()
			for schema, docs := range bySchema {
				if err := Validate(schema, docs); err != nil {
					t.Errorf("XSD validation: %v", err)
				}
			}
		})
	}
	state.docs[t][schema] = append(state.docs[t][schema], doc)
}

// batch bounds the documents of one xmllint run (its argument list).
const batch = 400

// Validate checks docs against schema, batch documents per xmllint run; the
// error names the failing documents.
func Validate(schema string, docs []string) error {
	for len(docs) > batch {
		if err := validate(schema, docs[:batch]); err != nil {
			return err
		}
		docs = docs[batch:]
	}
	return validate(schema, docs)
}

func validate(schema string, docs []string) error {
	if len(docs) == 0 {
		return nil
	}
	state.once.Do(func() { state.path, _ = exec.LookPath("xmllint") })
	if state.path == "" {
		return fmt.Errorf("xmllint is not installed")
	}
	dir, err := os.MkdirTemp("", "xsd")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	abs, err := filepath.Abs(schema)
	if err != nil {
		return err
	}
	args := []string{"--noout", "--nonet", "--schema", abs}
	for i, d := range docs {
		p := filepath.Join(dir, fmt.Sprintf("doc%03d.xml", i))
		if err := os.WriteFile(p, []byte(d), 0o600); err != nil {
			return err
		}
		args = append(args, p)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, state.path, args...).CombinedOutput()
	if err != nil {
		var bad []string
		for i, d := range docs {
			if strings.Contains(string(out), fmt.Sprintf("doc%03d.xml fails", i)) {
				bad = append(bad, d)
			}
		}
		return fmt.Errorf("%w\n%s\nfailing documents:\n%s", err, out, strings.Join(bad, "\n"))
	}
	return nil
}
