package adhoc_test

import (
	"encoding/xml"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"agentgw/internal/xsdtest"
	"agentgw/wire"
)

var update = flag.Bool("update", false, "rewrite golden files")

// golden compares got with ../testdata/golden/NAME.xml, rewriting it
// under -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("..", "testdata", "golden", name+".xml")
	if *update {
		if err := os.WriteFile(path, []byte(got+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("golden %s: %v (run with -update)", name, err)
	}
	if strings.TrimSpace(string(want)) != got {
		t.Errorf("%s:\n got %s\nwant %s", name, got, strings.TrimSpace(string(want)))
	}
}

func marshal(t *testing.T, r xml.TokenReader) string {
	t.Helper()
	s, err := wire.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func parse(t *testing.T, s string) wire.Element {
	t.Helper()
	el, err := wire.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return el
}

// formXSD checks a data form against testdata/data-forms.xsd and
// commandXSD a command against testdata/commands.xsd, when the test ends.
func formXSD(t *testing.T, doc string) {
	t.Helper()
	xsdtest.Check(t, filepath.Join("testdata", "data-forms.xsd"), doc)
}

func commandXSD(t *testing.T, doc string) {
	t.Helper()
	xsdtest.Check(t, filepath.Join("testdata", "commands.xsd"), doc)
}
