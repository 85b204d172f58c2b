package cli

import (
	"context"
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"text/tabwriter"

	"agentgw/api"
	"agentgw/app"
	"agentgw/db"
	"agentgw/manifest"
	"agentgw/runtime/sandbox"
)

func checkConfig(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("check-config", flag.ContinueOnError)
	path := fs.String("config", "", "configuration file")
	if _, err := parse(fs, args, 0, 0); err != nil {
		return err
	}
	if err := requireConfig("check-config", *path); err != nil {
		return err
	}
	abi := sandbox.ABI()
	desc, err := app.CheckConfig(*path, abi)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "ok: %s\n", desc)
	fmt.Fprintf(stdout, "landlock: %s\n", landlockText(abi))
	return nil
}

// landlockText describes the kernel's Landlock ABI for check-config and
// version.
func landlockText(abi int) string {
	if abi == 0 {
		return "none (runtime children cannot be sandboxed on this kernel)"
	}
	return fmt.Sprintf("ABI %d", abi)
}

// readManifest validates a manifest file, under the component domain when
// domain is not empty.
func readManifest(path, domain string) (*manifest.Manifest, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	opts := manifest.Options{Domain: domain}
	m, err := manifest.Parse(raw, opts)
	var merr *manifest.Error
	if errors.As(err, &merr) && merr.Kind == manifest.KindDomain {
		return nil, fmt.Errorf("%s: %w (component.domain is %s)", path, err, opts.Domain)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return m, nil
}

func manifestHash(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("manifest hash", flag.ContinueOnError)
	path := fs.String("config", "", "configuration file (checks the component domain)")
	pos, err := parse(fs, args, 1, 1)
	if err != nil {
		return err
	}
	var domain string
	if *path != "" {
		a, err := app.LoadAdmin(*path)
		if err != nil {
			return err
		}
		domain = a.Domain()
	}
	m, err := readManifest(pos[0], domain)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s %s sha-256 %s\n", m.JID, m.Version, m.HashBase64())
	return nil
}

func endpoint(ctx context.Context, sub string, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("endpoint "+sub, flag.ContinueOnError)
	path := fs.String("config", "", "configuration file")
	var activate, notes *bool
	var minPos, maxPos int
	switch sub {
	case "register":
		activate = fs.Bool("activate", false, "activate the registered version")
		minPos, maxPos = 1, math.MaxInt
	case "activate", "remove-version":
		minPos, maxPos = 2, 2
	case "deactivate", "status", "remove":
		minPos, maxPos = 1, 1
	case "sync":
		notes = fs.Bool("notes", false, "also print what the import changed in the tools it kept")
		minPos, maxPos = 1, 1
	case "list":
	default:
		return fmt.Errorf("%w: unknown endpoint subcommand %q", errUsage, sub)
	}
	pos, err := parse(fs, args, minPos, maxPos)
	if err != nil {
		return err
	}
	if err := requireConfig(fs.Name(), *path); err != nil {
		return err
	}
	adm, err := app.OpenAdmin(ctx, *path, os.Stderr)
	if err != nil {
		return err
	}
	defer adm.Close()
	store := adm.Store

	switch sub {
	case "register":
		return registerAll(ctx, adm, pos, *activate, stdout, stderr)
	case "activate":
		j, err := endpointJID(adm, pos[0])
		if err != nil {
			return err
		}
		if err := store.Activate(ctx, j, pos[1], nil); err != nil {
			return storeError(err, j, pos[1])
		}
		fmt.Fprintf(stdout, "activated %s %s\n", j, pos[1])
	case "deactivate":
		j, err := endpointJID(adm, pos[0])
		if err != nil {
			return err
		}
		if err := store.Deactivate(ctx, j); err != nil {
			return storeError(err, j, "")
		}
		fmt.Fprintf(stdout, "deactivated %s\n", j)
	case "status":
		j, err := endpointJID(adm, pos[0])
		if err != nil {
			return err
		}
		reg, err := store.RegistrationStatus(ctx, j)
		if err != nil {
			return storeError(err, j, "")
		}
		removed, err := store.Tombstones(ctx, j)
		if err != nil {
			return err
		}
		imports, err := store.Imports(ctx, j)
		if err != nil {
			return err
		}
		printStatus(stdout, reg, removed, imports)
	case "sync":
		j, err := endpointJID(adm, pos[0])
		if err != nil {
			return err
		}
		return syncEndpoint(ctx, adm, j, *notes, stdout)
	case "remove-version":
		j, err := endpointJID(adm, pos[0])
		if err != nil {
			return err
		}
		if err := store.RemoveVersion(ctx, j, pos[1]); err != nil {
			return storeError(err, j, pos[1])
		}
		fmt.Fprintf(stdout, "removed %s %s\n", j, pos[1])
	case "remove":
		j, err := endpointJID(adm, pos[0])
		if err != nil {
			return err
		}
		if err := store.RemoveEndpoint(ctx, j); err != nil {
			return storeError(err, j, "")
		}
		fmt.Fprintf(stdout, "removed %s\n", j)
	case "list":
		all, err := store.Endpoints(ctx)
		if err != nil {
			return err
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "JID\tACTIVE\tVERSIONS")
		for _, st := range all {
			active := st.Active
			if active == "" {
				active = "-"
			}
			fmt.Fprintf(tw, "%s\t%s\t%d\n", st.JID, active, len(st.Versions))
		}
		return tw.Flush()
	}
	return nil
}

// register registers one manifest file (and activates it), writing the
// historic per-file lines to stdout; isNew reports that a new version was
// stored.
func register(ctx context.Context, adm *app.Admin, file string, activate bool, stdout io.Writer) (isNew bool, err error) {
	m, err := readManifest(file, adm.Domain())
	if err != nil {
		return false, err
	}
	// What is stored must be servable over XMPP, as for <register/>.
	if err := api.CheckServable(m); err != nil {
		return false, fmt.Errorf("%s: %w", file, err)
	}
	v := db.Version{
		JID: m.JID, Version: m.Version, Hash: m.Hash, Canonical: m.Canonical,
		Name: m.Name, Title: m.Title, Description: m.Description,
	}
	isNew, err = adm.Store.RegisterVersion(ctx, v, "admin")
	if err != nil {
		return false, storeError(err, m.JID, m.Version)
	}
	word := "registered"
	if !isNew {
		word = "unchanged"
	}
	fmt.Fprintf(stdout, "%s %s %s sha-256 %s\n", word, m.JID, m.Version, m.HashBase64())
	if activate {
		if err := adm.Store.Activate(ctx, m.JID, m.Version, &m.Hash); err != nil {
			return isNew, storeError(err, m.JID, m.Version)
		}
		fmt.Fprintf(stdout, "activated %s %s\n", m.JID, m.Version)
	}
	return isNew, nil
}

// printStatus prints an endpoint: "*" marks the active version and "r" a
// version retained by a task or result (neither can be removed), and the
// removed versions follow with the hash their tombstone keeps. For an mcp
// endpoint, the last import and the tools each imported version left out
// follow, with the reasons.
func printStatus(w io.Writer, reg db.Registration, removed []db.Tombstone, imports []db.Import) {
	active := reg.Active
	if active == "" {
		active = "(inactive)"
	}
	fmt.Fprintf(w, "jid: %s\norigin: %s\nactive: %s\nversions:\n", reg.JID, reg.Origin, active)
	for _, v := range reg.Versions {
		mark := " "
		switch {
		case v.Version == reg.Active:
			mark = "*"
		case reg.Retained[v.Version]:
			mark = "r"
		}
		fmt.Fprintf(w, " %s %s sha-256 %s registered %s\n", mark, v.Version,
			base64.StdEncoding.EncodeToString(v.Hash[:]), v.CreatedAt.UTC().Format(timeLayout))
	}
	if len(removed) > 0 {
		fmt.Fprintln(w, "removed:")
		for _, ts := range removed {
			fmt.Fprintf(w, "   %s sha-256 %s removed %s\n", ts.Version,
				base64.StdEncoding.EncodeToString(ts.Hash[:]), ts.RemovedAt.UTC().Format(timeLayout))
		}
	}
	for _, imp := range imports {
		if imp.Latest {
			fmt.Fprintf(w, "last import: %s at %s\n", imp.Version, imp.ImportedAt.UTC().Format(timeLayout))
		}
	}
	for _, imp := range imports {
		if len(imp.Skipped) == 0 {
			continue
		}
		fmt.Fprintf(w, "skipped by the import of %s:\n", imp.Version)
		for _, sk := range imp.Skipped {
			fmt.Fprintf(w, "   %s: %s\n", sk.Tool, sk.Reason)
		}
	}
}

// syncEndpoint imports the tool list of an mcp endpoint's server
// (app.Admin.SyncEndpoint) and says what changed.
func syncEndpoint(ctx context.Context, adm *app.Admin, jid string, notes bool, stdout io.Writer) error {
	res, err := adm.SyncEndpoint(ctx, jid)
	if err != nil {
		return err
	}
	word := "unchanged"
	switch {
	case res.Registered:
		word = "registered"
	case res.Changed:
		word = "imported"
	}
	fmt.Fprintf(stdout, "%s %s %s sha-256 %s\n", word, res.JID, res.Version, base64.StdEncoding.EncodeToString(res.Hash[:]))
	if res.Activated {
		fmt.Fprintf(stdout, "activated %s %s\n", res.JID, res.Version)
	} else if res.Active != res.Version {
		active := res.Active
		if active == "" {
			active = "(inactive)"
		}
		fmt.Fprintf(stdout, "active: %s (an unchanged tool list changes nothing)\n", active)
	}
	fmt.Fprintf(stdout, "tools: %d, skipped: %d\n", res.Tools, len(res.Skipped))
	for _, sk := range res.Skipped {
		fmt.Fprintf(stdout, "skipped %s: %s\n", sk.Tool, sk.Reason)
	}
	if notes {
		for _, n := range res.Notes {
			fmt.Fprintf(stdout, "note %s: %s\n", n.Tool, n.Note)
		}
	}
	return nil
}

// timeLayout is how the CLI prints instants.
const timeLayout = "2006-01-02T15:04:05Z"

// storeError rewords store errors for an operator.
func storeError(err error, jid, version string) error {
	switch {
	case errors.Is(err, db.ErrNotFound) && version != "":
		return fmt.Errorf("%s has no version %s", jid, version)
	case errors.Is(err, db.ErrNotFound):
		return fmt.Errorf("no endpoint %s", jid)
	case errors.Is(err, db.ErrActive):
		return fmt.Errorf("version %s of %s is active: activate another version or deactivate the endpoint first", version, jid)
	case errors.Is(err, db.ErrRetained) && version != "":
		return fmt.Errorf("version %s of %s is retained by a task or result; it can be removed once that expires", version, jid)
	case errors.Is(err, db.ErrRetained):
		return fmt.Errorf("a version of %s is retained by a task or result; it can be removed once that expires", jid)
	case errors.Is(err, db.ErrRemoved):
		return fmt.Errorf("version %s of %s was removed; only its removed content may be registered under it again", version, jid)
	case errors.Is(err, db.ErrConflict):
		return fmt.Errorf("version %s of %s is already registered with different content; register it under a new version", version, jid)
	}
	return err
}

// endpointJID normalizes an endpoint JID given on the command line: a
// virtual endpoint under the component domain, or a self-registered account
// of a local domain.
func endpointJID(adm *app.Admin, s string) (string, error) {
	j, err := parseBareUnder(s, adm.Domain())
	if err == nil {
		return j, nil
	}
	for _, d := range adm.LocalDomains() {
		if local, lerr := parseBareUnder(s, d); lerr == nil {
			return local, nil
		}
	}
	return "", fmt.Errorf("%q: %w", s, err)
}

// serve is `agentgw serve -config FILE`; app.Serve builds and runs it.
func serve(ctx context.Context, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	path := fs.String("config", "", "configuration file")
	if _, err := parse(fs, args, 0, 0); err != nil {
		return err
	}
	if err := requireConfig("serve", *path); err != nil {
		return err
	}
	return app.Serve(ctx, *path, stderr)
}
