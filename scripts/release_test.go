// Package scripts holds the project's shell scripts; its test checks what
// scripts/release builds.
package scripts_test

import (
	"bytes"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// specHashLine is what `agentgw manifest hash` prints for the spec's
// example manifest (testdata/manifest/weather.json): the spec's hash.
const specHashLine = "weather@agents.example 1.4.0 sha-256 K2/YdwvIBAlfUIeZHiNCyiYA4m4W2wrEOqXQDoQyXp4=\n"

// emulators runs each release binary: natively or under Debian's
// qemu-user-static.
var emulators = map[string]string{
	"agentgw-linux-amd64": "",
	"agentgw-linux-arm64": "qemu-aarch64-static",
	"agentgw-linux-armv6": "qemu-arm-static",
	"agentgw-linux-armv7": "qemu-arm-static",
}

// TestRelease runs scripts/release: four static binaries and a SHA256SUMS
// that matches them; each runs (the ARM ones under qemu) and prints its
// version and the spec's hash of the spec's example manifest; building a
// target again gives the same bytes.
func TestRelease(t *testing.T) {
	if testing.Short() {
		t.Skip("cross-compiles four binaries")
	}
	for _, emu := range []string{"qemu-aarch64-static", "qemu-arm-static", "git"} {
		if _, err := exec.LookPath(emu); err != nil {
			if os.Getenv("AGENTGW_REQUIRE_SERVERS") != "" {
				t.Fatalf("%s is not installed (scripts/test installs qemu-user-static)", emu)
			}
			t.Skipf("%s is not installed", emu)
		}
	}
	dir := t.TempDir()
	if out, err := exec.Command("./release", dir).CombinedOutput(); err != nil {
		t.Fatalf("scripts/release: %v\n%s", err, out)
	}
	sums, err := os.ReadFile(filepath.Join(dir, "SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(sums)), "\n")
	if len(lines) != len(emulators) {
		t.Fatalf("SHA256SUMS has %d lines:\n%s", len(lines), sums)
	}
	manifest, err := filepath.Abs("../testdata/manifest/weather.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range lines {
		sum, name, ok := strings.Cut(line, "  ")
		emu, known := emulators[name]
		if !ok || !known {
			t.Fatalf("SHA256SUMS line %q", line)
		}
		bin := filepath.Join(dir, name)
		raw, err := os.ReadFile(bin)
		if err != nil {
			t.Fatal(err)
		}
		if got := sha256.Sum256(raw); hex.EncodeToString(got[:]) != sum {
			t.Errorf("%s: SHA256SUMS says %s, the file is %x", name, sum, got)
		}
		checkStatic(t, bin)
		run := func(args ...string) string {
			t.Helper()
			argv := append([]string{bin}, args...)
			if emu != "" {
				argv = append([]string{emu}, argv...)
			}
			out, err := exec.Command(argv[0], argv[1:]...).Output()
			if err != nil {
				t.Fatalf("%s %v: %v", name, args, err)
			}
			return string(out)
		}
		version := run("version")
		arch := strings.TrimPrefix(name, "agentgw-linux-")
		goarch, goarm := arch, ""
		if strings.HasPrefix(arch, "armv") {
			goarch, goarm = "arm", strings.TrimPrefix(arch, "armv")
		}
		for _, want := range []string{"\ncommit: ", "  CGO_ENABLED=0\n", "  -trimpath=true\n", "  GOARCH=" + goarch + "\n"} {
			if !strings.Contains(version, want) {
				t.Errorf("%s version lacks %q:\n%s", name, want, version)
			}
		}
		if goarm != "" && !strings.Contains(version, "  GOARM="+goarm+"\n") {
			t.Errorf("%s version lacks GOARM=%s:\n%s", name, goarm, version)
		}
		if strings.Contains(version, "commit: unknown") {
			t.Errorf("%s was not stamped with its commit:\n%s", name, version)
		}
		if got := run("manifest", "hash", manifest); got != specHashLine {
			t.Errorf("%s manifest hash: %q, want %q", name, got, specHashLine)
		}
	}

	// Reproducible: the same target built again is the same file.
	again := t.TempDir()
	if out, err := exec.Command("./release", again, "arm64").CombinedOutput(); err != nil {
		t.Fatalf("scripts/release arm64: %v\n%s", err, out)
	}
	a, _ := os.ReadFile(filepath.Join(dir, "agentgw-linux-arm64"))
	b, _ := os.ReadFile(filepath.Join(again, "agentgw-linux-arm64"))
	if !bytes.Equal(a, b) {
		t.Errorf("two builds of agentgw-linux-arm64 differ")
	}
}

// checkStatic fails unless bin is an ELF executable with no interpreter
// and no shared libraries.
func checkStatic(t *testing.T, bin string) {
	t.Helper()
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatalf("%s: %v", bin, err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Errorf("%s has an interpreter: not static", bin)
		}
	}
	if libs, _ := f.ImportedLibraries(); len(libs) > 0 {
		t.Errorf("%s needs %v: not static", bin, libs)
	}
}
