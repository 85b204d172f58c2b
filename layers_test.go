package main

import (
	"go/ast"
	"go/build"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

const module = "agentgw"

// TestLayers holds the code to the layers table of docs/ARCHITECTURE.md:
// every package of the module is in exactly one row, unless it stands
// outside the table (outsideLayers), and imports only packages of its
// own row or of rows below it.
func TestLayers(t *testing.T) {
	rows := layerRows(t, "docs/ARCHITECTURE.md")
	row := make(map[string]int)
	for i, pkgs := range rows {
		for _, p := range pkgs {
			if prev, ok := row[p]; ok {
				t.Errorf("%s is in rows %d and %d", p, prev+1, i+1)
			}
			row[p] = i
		}
	}
	imports := moduleImports(t)
	for p := range row {
		if _, ok := imports[p]; !ok {
			t.Errorf("the table names %s, which is not a package", p)
		}
	}
	for p, deps := range imports {
		if outsideLayers(p) {
			continue
		}
		r, ok := row[p]
		if !ok {
			t.Errorf("%s is in no row of the layers table", p)
			continue
		}
		for _, q := range deps {
			if qr, ok := row[q]; ok && qr < r {
				t.Errorf("%s (row %d) imports %s, a row above it (%d)", p, r+1, q, qr+1)
			}
		}
	}
}

// TestCompositionRoot holds the rules of the composition root (the "app"
// row of docs/ARCHITECTURE.md): app alone reads config, and the commands
// under cli parse flags and call app; they open no store and build no
// logger of their own. Test files and the packages outside the layers
// are exempt.
func TestCompositionRoot(t *testing.T) {
	for p, deps := range moduleImports(t) {
		if p != "app" && p != "config" && !outsideLayers(p) && slices.Contains(deps, "config") {
			t.Errorf("%s imports config: only app reads the configuration", p)
		}
	}
	forbidden := map[string][]string{
		"db":   {"Open"},
		"slog": {"New", "NewTextHandler", "NewJSONHandler"},
	}
	err := filepath.WalkDir("cli", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if x, ok := sel.X.(*ast.Ident); ok && slices.Contains(forbidden[x.Name], sel.Sel.Name) {
				t.Errorf("%s calls %s.%s: app builds the store and the logger of every command", path, x.Name, sel.Sel.Name)
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// outsideLayers reports whether package p (a path inside the module, "."
// for the root) stands outside the layers table: internal packages, test
// support and tools.
func outsideLayers(p string) bool {
	first, _, _ := strings.Cut(p, "/")
	switch first {
	case "internal", "integration", "cmd", "contrib", "scripts", "examples", "demo", "testdata":
		return true
	}
	return strings.HasSuffix(p, "test")
}

var backticked = regexp.MustCompile("`([^`]+)`")

// layerRows reads the packages column of the table under "## Layers" of
// the page at path, top row first. `main.go` stands for the root package.
func layerRows(t *testing.T, path string) [][]string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "\n## Layers\n")
	if !ok {
		t.Fatalf("%s has no Layers section", path)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	var rows [][]string
	for _, line := range strings.Split(section, "\n") {
		cells := strings.Split(line, "|")
		if !strings.HasPrefix(line, "| ") || len(cells) < 4 || strings.TrimSpace(cells[1]) == "layer" {
			continue
		}
		var pkgs []string
		for _, m := range backticked.FindAllStringSubmatch(cells[2], -1) {
			p := m[1]
			if p == "main.go" {
				p = "."
			}
			pkgs = append(pkgs, p)
		}
		rows = append(rows, pkgs)
	}
	if len(rows) < 2 {
		t.Fatalf("%s: no layers table found", path)
	}
	return rows
}

// TestStoreEngines holds db's rule that its users never learn which
// engine a store has: outside db and the packages under it, no package
// imports a database driver (test support and tools stand outside).
func TestStoreEngines(t *testing.T) {
	drivers := []string{"github.com/jackc/pgx", "modernc.org/sqlite"}
	for p, imps := range packageImports(t) {
		if p == "db" || strings.HasPrefix(p, "db/") || outsideLayers(p) {
			continue
		}
		for _, imp := range imps {
			for _, d := range drivers {
				if imp == d || strings.HasPrefix(imp, d+"/") {
					t.Errorf("%s imports %s: only db knows the store's engines", p, imp)
				}
			}
		}
	}
}

// moduleImports maps every package of the module (its path inside the
// module) to the module's packages its non-test files import.
func moduleImports(t *testing.T) map[string][]string {
	t.Helper()
	out := make(map[string][]string)
	for p, imps := range packageImports(t) {
		var deps []string
		for _, imp := range imps {
			if imp == module {
				deps = append(deps, ".")
			} else if rest, ok := strings.CutPrefix(imp, module+"/"); ok {
				deps = append(deps, rest)
			}
		}
		out[p] = deps
	}
	return out
}

// packageImports maps every package of the module (its path inside the
// module) to every import path its non-test files import.
func packageImports(t *testing.T) map[string][]string {
	t.Helper()
	out := make(map[string][]string)
	err := filepath.WalkDir(".", func(dir string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		if name := d.Name(); dir != "." && (strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules") {
			return filepath.SkipDir
		}
		pkg, err := build.ImportDir(dir, 0)
		if err != nil {
			if _, ok := err.(*build.NoGoError); ok {
				return nil
			}
			return err
		}
		out[filepath.ToSlash(dir)] = pkg.Imports
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
