package scripts_test

import (
	"bytes"
	"crypto/sha256"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	_ "modernc.org/sqlite" // to read the installed database's schema version
)

// The test's own versions of the amd64 package: an older build installed
// first, then a newer one over it. Both are built from this tree.
const (
	oldTestVersion = "0.0.1~test1"
	newTestVersion = "0.0.1~test2"
)

// TestDebianPackage installs the amd64 package, as root, into a throwaway
// root: a copy-on-write overlay of this machine's root file system in a
// private mount namespace, whose writes land in a tmpfs that vanishes with
// the namespace. So the machine's users, groups, packages and files are
// never touched, and a machine where the package was installed (and its
// user kept, as purge does) runs the test as well as a fresh one. In that
// root, after removing any agentgw package, user, group and directory the
// copy has, it checks: dpkg -i; the files, their modes, the agentgw user
// and `agentgw version`; `agentgw init` into /var/lib/agentgw as that
// user; systemd-analyze verify of the installed unit; dpkg -i of a newer
// build, which leaves the configuration, the secret and the database
// untouched and whose binary then migrates the database (an older schema
// from testdata/upgrade, as an earlier release left it), backing it up
// first; dpkg -r, which keeps the data, and dpkg --purge, which deletes it.
//
// It is skipped unless run as root, or fails then under
// AGENTGW_REQUIRE_SERVERS. Where the throwaway root cannot be made (no
// mount namespace or overlayfs, as in some containers), it is skipped with
// the reason even under AGENTGW_REQUIRE_SERVERS: the test never installs
// on the machine itself.
func TestDebianPackage(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and installs a package")
	}
	if debs := os.Getenv(throwawayEnv); debs != "" {
		pkgs := filepath.SplitList(debs)
		if len(pkgs) != 2 {
			t.Fatalf("%s=%q: want two packages", throwawayEnv, debs)
		}
		debianPackageSteps(t, pkgs[0], pkgs[1])
		return
	}
	require := os.Getenv("AGENTGW_REQUIRE_SERVERS") != ""
	skip := func(format string, args ...any) {
		t.Helper()
		if require {
			t.Fatalf(format, args...)
		}
		t.Skipf(format, args...)
	}
	if os.Geteuid() != 0 {
		skip("installs a package: run as root")
	}
	for _, tool := range []string{"dpkg", "dpkg-query", "systemd-analyze", "runuser", "userdel", "groupdel", "git", "unshare", "chroot", "mount"} {
		if _, err := exec.LookPath(tool); err != nil {
			skip("%s is not installed", tool)
		}
	}
	if out, err := exec.Command("unshare", "--mount", "true").CombinedOutput(); err != nil {
		t.Skipf("cannot make a throwaway root to install the package into (unshare --mount: %v: %s); the test never installs on the machine itself", err, bytes.TrimSpace(out))
	}

	dir := t.TempDir()
	oldDeb := buildPackage(t, dir, oldTestVersion)
	newDeb := buildPackage(t, dir, newTestVersion)
	inThrowawayRoot(t, dir, oldDeb, newDeb)
}

// throwawayEnv, set to the two packages, tells the test binary that it
// runs chrooted in the throwaway root and is to install them there.
const throwawayEnv = "AGENTGW_DEB_TEST_PACKAGES"

// throwawaySource is the source name of the throwaway root's overlay
// mount, by which the test binary inside knows where it is.
const throwawaySource = "agentgw-deb-test"

// enterThrowawayRoot, run by sh in a new private mount namespace, mounts a
// tmpfs at $1 and in it the throwaway root: an overlay whose lower layer is
// this machine's root file system. It binds /proc, /sys and /dev there,
// and read-only the directories named up to "--" (the test binary's, the
// packages', the checkout: on a file system of their own, as /tmp often
// is, the overlay would not show them), then runs the rest chrooted, in
// the same working directory. It exits 77 when the root cannot be made.
const enterThrowawayRoot = `
top=$1; shift
root=$top/root
fail() { echo "$*" >&2; exit 77; }
mount -t tmpfs -o mode=0755 ` + throwawaySource + `-upper "$top" || fail "cannot mount a tmpfs"
mkdir "$top/upper" "$top/work" "$root"
mount -t overlay -o "lowerdir=/,upperdir=$top/upper,workdir=$top/work" ` + throwawaySource + ` "$root" ||
	fail "cannot mount an overlay of / (overlayfs)"
for d in /proc /sys /dev; do
	mount --rbind "$d" "$root$d" || fail "cannot bind $d"
done
while [ "$1" != -- ]; do
	mkdir -p "$root$1" && mount --rbind "$1" "$root$1" && mount -o remount,bind,ro "$root$1" ||
		fail "cannot bind $1"
	shift
done
shift
exec chroot "$root" /bin/sh -c 'cd "$1" && shift && exec "$@"' sh "$PWD" "$@"
`

// inThrowawayRoot runs this test again, chrooted in a throwaway root, to
// install oldDeb and then newDeb there.
func inThrowawayRoot(t *testing.T, debDir, oldDeb, newDeb string) {
	t.Helper()
	bin, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	checkout, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"--mount", "--propagation", "private", "--", "sh", "-c", enterThrowawayRoot, "sh",
		t.TempDir(), filepath.Dir(bin), debDir, checkout, "--",
		bin, "-test.run=^TestDebianPackage$", "-test.count=1", "-test.v", "-test.timeout=20m"}
	cmd := exec.Command("unshare", args...)
	cmd.Env = append(os.Environ(), throwawayEnv+"="+oldDeb+string(os.PathListSeparator)+newDeb)
	out, err := cmd.CombinedOutput()
	// Each line marked, so that the inner run's "--- FAIL" is not read
	// as a result of this one.
	var marked strings.Builder
	for line := range strings.Lines(string(out)) {
		marked.WriteString("root| " + line)
	}
	var exit *exec.ExitError
	switch {
	case err == nil:
		t.Logf("in the throwaway root:\n%s", marked.String())
	case errors.As(err, &exit) && exit.ExitCode() == 77:
		t.Skipf("cannot make a throwaway root to install the package into; the test never installs on the machine itself:\n%s", out)
	default:
		t.Fatalf("in the throwaway root: %v\n%s", err, marked.String())
	}
}

// inThrowawayOverlay reports whether / is the throwaway root's overlay.
func inThrowawayOverlay() bool {
	raw, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return false
	}
	root := false
	for line := range strings.Lines(string(raw)) {
		// ID parent major:minor root mountpoint options [optional...] - fstype source super-options
		f := strings.Fields(line)
		sep := slices.Index(f, "-")
		if len(f) < 5 || sep < 0 || sep+2 >= len(f) || f[4] != "/" {
			continue
		}
		// The last mount at / is the one seen.
		root = f[sep+1] == "overlay" && f[sep+2] == throwawaySource
	}
	return root
}

// debianPackageSteps installs oldDeb, then newDeb over it, and removes and
// purges the package, checking each step. It runs only in the throwaway
// root, which it first makes a machine that never had the package.
func debianPackageSteps(t *testing.T, oldDeb, newDeb string) {
	if !inThrowawayOverlay() {
		t.Fatalf("%s is set, but / is not the throwaway root: refusing to install on this machine", throwawayEnv)
	}
	run := func(name string, args ...string) {
		t.Helper()
		if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
			t.Fatalf("%s %v: %v\n%s", name, args, err, out)
		}
	}
	if out, _ := exec.Command("dpkg-query", "-W", "-f=${Status}", "agentgw").Output(); len(out) > 0 && !strings.Contains(string(out), "not-installed") {
		run("dpkg", "--purge", "agentgw")
	}
	if _, err := user.Lookup("agentgw"); err == nil {
		run("userdel", "agentgw")
	}
	if _, err := user.LookupGroup("agentgw"); err == nil {
		run("groupdel", "agentgw")
	}
	for _, p := range []string{"/var/lib/agentgw", "/usr/bin/agentgw", "/lib/systemd/system/agentgw.service", "/etc/systemd/system/agentgw.service", enableLink} {
		if err := os.RemoveAll(p); err != nil {
			t.Fatal(err)
		}
	}

	dpkg := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("dpkg", args...)
		cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("dpkg %v: %v\n%s", args, err, out)
		}
		return string(out)
	}

	// 1. Install.
	dpkg("-i", oldDeb)

	// 2. Files, modes, the user, the version.
	for path, want := range map[string]os.FileMode{
		"/usr/bin/agentgw":                           0o755,
		"/lib/systemd/system/agentgw.service":        0o644,
		"/usr/share/doc/agentgw/README.md":           0o644,
		"/usr/share/doc/agentgw/config.example.toml": 0o644,
		"/usr/share/doc/agentgw/copyright":           0o644,
	} {
		checkOwned(t, path, want, 0, 0)
	}
	u, err := user.Lookup("agentgw")
	if err != nil {
		t.Fatalf("postinst made no agentgw user: %v", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	if uid == 0 || uid >= 1000 || u.HomeDir != "/var/lib/agentgw" {
		t.Errorf("agentgw user = %+v: want a system user at home in /var/lib/agentgw", u)
	}
	if g, err := user.LookupGroupId(u.Gid); err != nil || g.Name != "agentgw" {
		t.Errorf("agentgw's group = %v, %v", g, err)
	}
	passwd, _ := exec.Command("getent", "passwd", "agentgw").Output()
	if !strings.HasSuffix(strings.TrimSpace(string(passwd)), ":/usr/sbin/nologin") {
		t.Errorf("agentgw can log in: %s", passwd)
	}
	checkOwned(t, "/var/lib/agentgw", os.ModeDir|0o750, uid, gid)
	if out := agentgwAs(t, "root", "version"); !strings.HasPrefix(out, "agentgw "+oldTestVersion+"\n") {
		t.Errorf("agentgw version after installing %s:\n%s", oldTestVersion, out)
	}

	// 3. init as the packaged user.
	agentgwAs(t, "agentgw", "init", "-domain", "agents.example.org", "-server", "127.0.0.1:5347", "/var/lib/agentgw")
	conf := "/var/lib/agentgw/agentgw.toml"
	database := "/var/lib/agentgw/agentgw.db"
	for _, p := range []string{conf, "/var/lib/agentgw/component.secret", database} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatalf("init: %v", err)
		}
		if st := fi.Sys().(*syscall.Stat_t); int(st.Uid) != uid {
			t.Errorf("%s belongs to uid %d, not agentgw", p, st.Uid)
		}
	}
	agentgwAs(t, "agentgw", "check-config", "-config", conf)

	// 4. The installed unit verifies, with the installed binary.
	if out, err := exec.Command("systemd-analyze", "verify", "/lib/systemd/system/agentgw.service").CombinedOutput(); err != nil || len(bytes.TrimSpace(out)) > 0 {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
	}

	// What an earlier release left: a database of the previous schema,
	// in place of init's.
	old := newestFixture(t)
	raw, err := os.ReadFile(old.path)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{database, database + "-wal", database + "-shm"} {
		os.Remove(p)
	}
	if err := os.WriteFile(database, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(database, uid, gid); err != nil {
		t.Fatal(err)
	}
	before := map[string][32]byte{}
	for _, p := range []string{conf, "/var/lib/agentgw/component.secret", database} {
		before[p] = fileSum(t, p)
	}

	// 5. The newer build over it: nothing of the operator's changes.
	dpkg("-i", newDeb)
	for p, sum := range before {
		if fileSum(t, p) != sum {
			t.Errorf("dpkg -i of the newer package changed %s", p)
		}
	}
	if out := agentgwAs(t, "root", "version"); !strings.HasPrefix(out, "agentgw "+newTestVersion+"\n") {
		t.Errorf("agentgw version after the upgrade:\n%s", out)
	}
	// The new binary migrates the database the first time it opens it,
	// after copying it aside.
	out := agentgwAs(t, "agentgw", "endpoint", "list", "-config", conf)
	if !strings.Contains(out, "weather@agents.example") {
		t.Errorf("endpoint list after the upgrade lacks the old database's endpoint:\n%s", out)
	}
	after := schemaVersion(t, database)
	if after <= old.version {
		t.Errorf("schema version %d after the upgrade, the old database had %d", after, old.version)
	}
	backup := fmt.Sprintf("%s.pre-%d", database, after)
	if got := schemaVersion(t, backup); got != old.version {
		t.Errorf("%s has schema version %d, want the old database's %d", backup, got, old.version)
	}
	if !strings.Contains(out, backup) {
		t.Errorf("the migration did not say where the backup is:\n%s", out)
	}

	// 6. Remove keeps the data and says so; purge deletes it and says so,
	// and also the link of the operator's `systemctl enable`, which
	// deb-systemd-helper does not know.
	if err := os.MkdirAll(filepath.Dir(enableLink), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/lib/systemd/system/agentgw.service", enableLink); err != nil {
		t.Fatal(err)
	}
	out = dpkg("-r", "agentgw")
	if _, err := os.Stat("/usr/bin/agentgw"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("dpkg -r left /usr/bin/agentgw: %v", err)
	}
	if !strings.Contains(out, "kept /var/lib/agentgw") {
		t.Errorf("dpkg -r said:\n%s", out)
	}
	for _, p := range []string{conf, "/var/lib/agentgw/component.secret", database, backup} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("dpkg -r deleted the operator's data: %v", err)
		}
	}
	out = dpkg("--purge", "agentgw")
	if !strings.Contains(out, "purge: deleting /var/lib/agentgw") {
		t.Errorf("dpkg --purge said:\n%s", out)
	}
	if _, err := os.Stat("/var/lib/agentgw"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("dpkg --purge left /var/lib/agentgw: %v", err)
	}
	if _, err := os.Lstat(enableLink); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("dpkg --purge left the enable link %s: %v", enableLink, err)
	}
}

// enableLink is where `systemctl enable agentgw` links the unit.
const enableLink = "/etc/systemd/system/multi-user.target.wants/agentgw.service"

// buildPackage runs scripts/release for amd64 with the given version and
// returns the package's path.
func buildPackage(t *testing.T, dir, version string) string {
	t.Helper()
	out := filepath.Join(dir, version)
	cmd := exec.Command("./release", out, "amd64")
	cmd.Env = append(os.Environ(), "AGENTGW_RELEASE_VERSION="+version)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("scripts/release %s: %v\n%s", version, err, b)
	}
	return filepath.Join(out, "agentgw_"+version+"_amd64.deb")
}

// agentgwAs runs the installed /usr/bin/agentgw as the user, and returns
// its output (stdout and stderr).
func agentgwAs(t *testing.T, who string, args ...string) string {
	t.Helper()
	argv := append([]string{"-u", who, "--", "/usr/bin/agentgw"}, args...)
	cmd := exec.Command("runuser", argv...)
	cmd.Dir = "/"
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("agentgw %v as %s: %v\n%s", args, who, err, out)
	}
	return string(out)
}

func checkOwned(t *testing.T, path string, mode os.FileMode, uid, gid int) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Errorf("%v", err)
		return
	}
	st := fi.Sys().(*syscall.Stat_t)
	if fi.Mode() != mode || int(st.Uid) != uid || int(st.Gid) != gid {
		t.Errorf("%s: %v %d:%d, want %v %d:%d", path, fi.Mode(), st.Uid, st.Gid, mode, uid, gid)
	}
}

func fileSum(t *testing.T, path string) [32]byte {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Errorf("%v", err)
		return [32]byte{}
	}
	return sha256.Sum256(raw)
}

// newestFixture is testdata/upgrade's database of the newest earlier
// schema.
func newestFixture(t *testing.T) (f struct {
	path    string
	version int
}) {
	t.Helper()
	matches, _ := filepath.Glob("../testdata/upgrade/agentgw-v*.db")
	for _, m := range matches {
		v, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(filepath.Base(m), "agentgw-v"), ".db"))
		if err == nil && v > f.version {
			f.path, f.version = m, v
		}
	}
	if f.path == "" {
		t.Fatal("no testdata/upgrade/agentgw-vN.db")
	}
	return f
}

func schemaVersion(t *testing.T, path string) int {
	t.Helper()
	raw, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	var v int
	if err := raw.QueryRow("PRAGMA user_version").Scan(&v); err != nil {
		t.Fatal(err)
	}
	return v
}
