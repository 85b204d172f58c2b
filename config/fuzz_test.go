package config_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"agentgw/config"
)

// FuzzDecode checks that any TOML document decodes and validates to a
// configuration or to errors that name keys, without panicking. Seeds are
// config.example.toml and testdata/fuzz.
func FuzzDecode(f *testing.F) {
	example, err := os.ReadFile(filepath.Join("..", "config.example.toml"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(example)
	f.Add([]byte(minimal))
	// One directory for every input: relative paths resolve under it, and
	// it stays empty.
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, raw []byte) {
		if len(raw) > 64<<10 {
			return
		}
		file, err := config.Decode(raw)
		if err != nil {
			return
		}
		c, err := file.Validate(dir, filepath.Join(dir, "agentgw.toml"))
		var errs config.Errors
		switch {
		case err != nil && !errors.As(err, &errs):
			t.Fatalf("Validate returned %T, not config.Errors: %v", err, err)
		case err == nil && c == nil:
			t.Fatal("no configuration and no error")
		}
	})
}
