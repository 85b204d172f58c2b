package cli_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBulkRegister: a directory of 300 manifests, three of them bad, is
// registered in one run: 297 registered, the three named with their
// reasons, a failing exit status; a second run finds the 297 unchanged.
func TestBulkRegister(t *testing.T) {
	dir, cfg := setup(t)
	manifests := filepath.Join(dir, "manifests")
	if err := os.Mkdir(manifests, 0o750); err != nil {
		t.Fatal(err)
	}
	write := func(name, body string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(manifests, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	doc := func(local, title string) string {
		return fmt.Sprintf(`{"manifestSpecVersion":"0","agent":{"jid":"%s","name":"%s","title":"%s","version":"1.0.0"},"tools":[]}`, local, title, title)
	}
	for i := 0; i < 297; i++ {
		write(fmt.Sprintf("agent-%03d.json", i), doc(fmt.Sprintf("agent-%03d@agents.example", i), fmt.Sprintf("Agent %d", i)))
	}
	write("bad-syntax.json", `{"manifestSpecVersion":`)
	write("other-domain.json", doc("x@elsewhere.example", "Elsewhere"))
	// Same JID and version as agent-007, other content: sorted after it.
	write("zz-conflict.json", doc("agent-007@agents.example", "Impostor"))
	// Not a manifest by its name: skipped.
	write("README.txt", "not a manifest")

	check := func(code int, out, errs, summary string) {
		t.Helper()
		if code != 1 {
			t.Errorf("exit %d, want 1; stderr %q", code, errs)
		}
		if !strings.HasPrefix(out, summary+"\n") {
			t.Errorf("summary: %q, want %q", strings.SplitN(out, "\n", 2)[0], summary)
		}
		for _, want := range []string{
			"refused " + filepath.Join(manifests, "bad-syntax.json") + ": ",
			"refused " + filepath.Join(manifests, "other-domain.json") + ": ",
			"refused " + filepath.Join(manifests, "zz-conflict.json") + ": version 1.0.0 of agent-007@agents.example is already registered with different content",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("output lacks %q:\n%s", want, out)
			}
		}
		if n := strings.Count(out, "\nrefused "); n != 3 {
			t.Errorf("%d refused lines:\n%s", n, out)
		}
		if !strings.Contains(errs, "3 of 300 manifests refused") {
			t.Errorf("stderr %q", errs)
		}
	}
	code, out, errs := run(t, "endpoint", "register", "-config", cfg, "-activate", manifests)
	check(code, out, errs, "registered 297, unchanged 0, refused 3 (each activated)")
	if !strings.Contains(out, "other-domain.json: ") || !strings.Contains(out, "agents.example") {
		t.Errorf("the domain refusal does not say which domain is expected:\n%s", out)
	}
	code, out, errs = run(t, "endpoint", "register", "-config", cfg, manifests)
	check(code, out, errs, "registered 0, unchanged 297, refused 3")

	code, out, _ = run(t, "endpoint", "list", "-config", cfg)
	if code != 0 || strings.Count(out, " 1.0.0 ") != 297 {
		t.Errorf("list: %d endpoints active at 1.0.0", strings.Count(out, " 1.0.0 "))
	}
	if !strings.Contains(out, "agent-007@agents.example") {
		t.Errorf("list lacks agent-007")
	}

	// Files and directories mix; a good run exits 0.
	code, out, errs = run(t, "endpoint", "register", "-config", cfg,
		filepath.Join(manifests, "agent-001.json"), filepath.Join(manifests, "agent-002.json"))
	if code != 0 || out != "registered 0, unchanged 2, refused 0\n" {
		t.Errorf("two files: %d %q %q", code, out, errs)
	}
	// A directory gets the summary even with one manifest in it.
	one := filepath.Join(dir, "one")
	os.Mkdir(one, 0o750)
	os.WriteFile(filepath.Join(one, "a.json"), []byte(doc("one@agents.example", "One")), 0o600)
	if code, out, errs := run(t, "endpoint", "register", "-config", cfg, one); code != 0 || out != "registered 1, unchanged 0, refused 0\n" {
		t.Errorf("a directory of one: %d %q %q", code, out, errs)
	}
	code, out, _ = run(t, "endpoint", "register", "-config", cfg, filepath.Join(dir, "missing.json"), filepath.Join(manifests, "agent-001.json"))
	if code != 1 || !strings.Contains(out, "unchanged 1, refused 1") || !strings.Contains(out, "missing.json") {
		t.Errorf("a missing file: %d %q", code, out)
	}
}
