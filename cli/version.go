package cli

import (
	"fmt"
	"io"
	"runtime/debug"

	"agentgw/app"
	"agentgw/runtime/sandbox"
)

// Set by scripts/release with -ldflags "-X agentgw/cli.buildVersion=…
// -X agentgw/cli.buildCommit=…": the Go toolchain stamps the VCS state only
// when it can read the repository (not from a Git worktree, nor with
// -buildvcs=false), and a release must say what it was built from anyway.
var buildVersion, buildCommit string

// printVersion prints what the binary was built from, read from the build
// information the Go toolchain embeds: the module version, the VCS commit
// (and whether the tree had uncommitted changes), the Go version, and the
// build settings that matter for a deployment (target, cgo, -trimpath).
func printVersion(stdout io.Writer) error {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return fmt.Errorf("version: no build information in this binary")
	}
	settings := map[string]string{}
	for _, s := range bi.Settings {
		settings[s.Key] = s.Value
	}
	version := bi.Main.Version
	if buildVersion != "" {
		version = buildVersion
	} else if version == "" {
		version = "(devel)"
	}
	fmt.Fprintf(stdout, "agentgw %s\n", version)
	commit := settings["vcs.revision"]
	if commit == "" {
		commit = buildCommit
	}
	if commit == "" {
		commit = "unknown"
	}
	if settings["vcs.modified"] == "true" {
		commit += " (modified)"
	}
	fmt.Fprintf(stdout, "commit: %s\n", commit)
	if t := settings["vcs.time"]; t != "" {
		fmt.Fprintf(stdout, "commit time: %s\n", t)
	}
	fmt.Fprintf(stdout, "go: %s\n", bi.GoVersion)
	fmt.Fprintf(stdout, "landlock: %s\n", landlockText(sandbox.ABI()))
	sq, pg := app.SchemaVersions()
	fmt.Fprintf(stdout, "store schema: %d (SQLite), %d (PostgreSQL)\n", sq, pg)
	fmt.Fprintln(stdout, "build:")
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs", "vcs.revision", "vcs.time", "vcs.modified":
			continue // printed above
		}
		fmt.Fprintf(stdout, "  %s=%s\n", s.Key, s.Value)
	}
	return nil
}
