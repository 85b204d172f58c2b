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

// packages are the Debian packages scripts/release writes, by architecture,
// with the binary each must hold.
var packages = map[string]string{
	"amd64": "agentgw-linux-amd64",
	"arm64": "agentgw-linux-arm64",
	"armhf": "agentgw-linux-armv7",
}

// TestRelease runs scripts/release: four static binaries, three Debian
// packages and a SHA256SUMS that matches them all; each binary runs (the
// ARM ones under qemu) and prints its version and the spec's hash of the
// spec's example manifest; each package holds its binary and says the
// same version, and lintian finds nothing but the tags its overrides
// document; building a target again gives the same bytes.
func TestRelease(t *testing.T) {
	if testing.Short() {
		t.Skip("cross-compiles four binaries")
	}
	for _, emu := range []string{"qemu-aarch64-static", "qemu-arm-static", "git", "dpkg-deb", "lintian"} {
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
	if len(lines) != len(emulators)+len(packages) {
		t.Fatalf("SHA256SUMS has %d lines:\n%s", len(lines), sums)
	}
	version := releaseVersion(t)
	var binaries []string
	for _, line := range lines {
		sum, name, ok := strings.Cut(line, "  ")
		if !ok {
			t.Fatalf("SHA256SUMS line %q", line)
		}
		if strings.HasSuffix(name, ".deb") {
			checkSum(t, filepath.Join(dir, name), sum)
			continue
		}
		binaries = append(binaries, line)
	}
	for arch, bin := range packages {
		checkPackage(t, dir, arch, bin, version)
	}
	manifest, err := filepath.Abs("../testdata/manifest/weather.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range binaries {
		sum, name, _ := strings.Cut(line, "  ")
		emu, known := emulators[name]
		if !known {
			t.Fatalf("SHA256SUMS line %q", line)
		}
		bin := filepath.Join(dir, name)
		checkSum(t, bin, sum)
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
		if first, _, _ := strings.Cut(version, "\n"); first != "agentgw "+releaseVersion(t) {
			t.Errorf("%s version says %q, VERSION says %q", name, first, releaseVersion(t))
		}
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
	for _, name := range []string{"agentgw-linux-arm64", "agentgw_" + version + "_arm64.deb"} {
		a, _ := os.ReadFile(filepath.Join(dir, name))
		b, _ := os.ReadFile(filepath.Join(again, name))
		if len(a) == 0 || !bytes.Equal(a, b) {
			t.Errorf("two builds of %s differ", name)
		}
	}
}

// releaseVersion is the VERSION file's version, which scripts/release
// stamps into every binary and package.
func releaseVersion(t *testing.T) string {
	t.Helper()
	raw, err := os.ReadFile("../VERSION")
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(raw))
}

// checkSum fails unless the file's SHA-256 is sum (hex).
func checkSum(t *testing.T, path, sum string) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := sha256.Sum256(raw); hex.EncodeToString(got[:]) != sum {
		t.Errorf("%s: SHA256SUMS says %s, the file is %x", filepath.Base(path), sum, got)
	}
}

// checkPackage checks agentgw_VERSION_ARCH.deb in dir: its control fields,
// its files and their modes, that /usr/bin/agentgw is the release binary
// bin, its maintainer scripts, and that lintian reports no tag that
// packaging/deb/lintian-overrides does not document.
func checkPackage(t *testing.T, dir, arch, bin, version string) {
	t.Helper()
	deb := filepath.Join(dir, "agentgw_"+version+"_"+arch+".deb")
	field := func(name string) string {
		out, err := exec.Command("dpkg-deb", "-f", deb, name).Output()
		if err != nil {
			t.Fatalf("dpkg-deb -f %s %s: %v", deb, name, err)
		}
		return strings.TrimSpace(string(out))
	}
	if got := field("Package"); got != "agentgw" {
		t.Errorf("%s: Package %q", deb, got)
	}
	if got := field("Version"); got != version {
		t.Errorf("%s: Version %q, want %q", deb, got, version)
	}
	if got := field("Architecture"); got != arch {
		t.Errorf("%s: Architecture %q, want %q", deb, got, arch)
	}
	out, err := exec.Command("dpkg-deb", "-c", deb).Output()
	if err != nil {
		t.Fatalf("dpkg-deb -c %s: %v", deb, err)
	}
	listing := map[string]string{} // path: mode and owner
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if len(f) >= 6 {
			listing[strings.TrimPrefix(f[len(f)-1], ".")] = f[0] + " " + f[1]
		}
	}
	for path, want := range map[string]string{
		"/usr/bin/agentgw":                           "-rwxr-xr-x root/root",
		"/lib/systemd/system/agentgw.service":        "-rw-r--r-- root/root",
		"/usr/share/doc/agentgw/README.md":           "-rw-r--r-- root/root",
		"/usr/share/doc/agentgw/config.example.toml": "-rw-r--r-- root/root",
		"/usr/share/doc/agentgw/copyright":           "-rw-r--r-- root/root",
		"/usr/share/doc/agentgw/changelog.gz":        "-rw-r--r-- root/root",
		"/usr/share/lintian/overrides/agentgw":       "-rw-r--r-- root/root",
	} {
		if got := listing[path]; got != want {
			t.Errorf("%s: %s is %q, want %q", deb, path, got, want)
		}
	}
	for path := range listing {
		if strings.HasPrefix(path, "/var/") || strings.HasPrefix(path, "/etc/") {
			t.Errorf("%s ships %s: the package must not own the operator's data or configuration", deb, path)
		}
	}
	x := t.TempDir()
	if out, err := exec.Command("dpkg-deb", "-R", deb, x).CombinedOutput(); err != nil {
		t.Fatalf("dpkg-deb -R: %v\n%s", err, out)
	}
	packed, _ := os.ReadFile(filepath.Join(x, "usr/bin/agentgw"))
	built, _ := os.ReadFile(filepath.Join(dir, bin))
	if len(packed) == 0 || !bytes.Equal(packed, built) {
		t.Errorf("%s: /usr/bin/agentgw is not %s", deb, bin)
	}
	for _, script := range []string{"postinst", "prerm", "postrm"} {
		fi, err := os.Stat(filepath.Join(x, "DEBIAN", script))
		if err != nil || fi.Mode().Perm() != 0o755 {
			t.Errorf("%s: DEBIAN/%s: %v", deb, script, err)
		}
	}
	// --fail-on warning: an error or warning that no override documents
	// fails; informational tags are printed for the log.
	lint := exec.Command("lintian", "--fail-on", "error,warning", "--tag-display-limit", "0", deb)
	if out, err := lint.CombinedOutput(); err != nil {
		t.Errorf("lintian %s: %v\n%s", filepath.Base(deb), err, out)
	} else {
		t.Logf("lintian %s:\n%s", filepath.Base(deb), out)
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
