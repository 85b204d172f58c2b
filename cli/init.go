package cli

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"agentgw/app"
	"agentgw/internal/loopback"
	"agentgw/internal/lua"

	"mellium.im/xmpp/jid"
)

// Files that init writes into its directory.
const (
	initConfigName = "agentgw.toml"
	initSecretName = "component.secret"
	initDBName     = "agentgw.db"
	// initRunName is the parent of the tools' work directories
	// (app.RuntimeOptions.StateDir).
	initRunName = "run"
	// initSecretBytes is the entropy of a generated component secret,
	// written as hex (so it needs no quoting in any server's config).
	initSecretBytes = 32
	// defaultComponentPort is the XEP-0114 port Prosody and ejabberd use
	// unless told otherwise; Prosody also listens only on loopback by
	// default.
	defaultComponentPort = "5347"
)

// initDir writes a starter deployment into a directory: a commented,
// working configuration, a random component secret (mode 0600) and an empty
// database, then prints what to paste into the XMPP server's configuration.
// The secret is never printed: the snippets read it from its file or say how
// to insert it. init refuses to overwrite anything; when it fails halfway it
// removes what it wrote.
func initDir(ctx context.Context, args []string, stdout io.Writer) (err error) {
	flags := flag.NewFlagSet("init", flag.ContinueOnError)
	domain := flags.String("domain", "", "the component domain, e.g. agents.example.org")
	server := flags.String("server", "127.0.0.1:"+defaultComponentPort, "host:port of the XMPP server's component listener")
	pos, err := parse(flags, args, 1, 1)
	if err != nil {
		return err
	}
	if *domain == "" {
		return fmt.Errorf("%w: init: -domain is required", errUsage)
	}
	d, perr := jid.Parse(*domain)
	if perr != nil || d.Localpart() != "" || d.Resourcepart() != "" {
		return fmt.Errorf("init: -domain %q must be a domain such as agents.example.org", *domain)
	}
	host, port, perr := net.SplitHostPort(*server)
	if perr != nil || host == "" || port == "" {
		return fmt.Errorf("init: -server %q must be host:port", *server)
	}
	dir, err := filepath.Abs(pos[0])
	if err != nil {
		return fmt.Errorf("init: %w", err)
	}
	paths := []string{filepath.Join(dir, initConfigName), filepath.Join(dir, initSecretName), filepath.Join(dir, initDBName)}
	// Check everything before writing anything, so a refusal changes
	// nothing. The writes below use O_EXCL as well, against a race.
	for _, p := range append(paths, paths[2]+"-wal", paths[2]+"-shm") {
		if _, err := os.Lstat(p); err == nil {
			return fmt.Errorf("init: %s already exists; init never overwrites (remove it, or choose another directory)", p)
		} else if !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("init: %w", err)
		}
	}
	var created []string
	defer func() {
		if err != nil {
			for i := len(created) - 1; i >= 0; i-- {
				os.Remove(created[i])
			}
		}
	}()
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		// 0755, as the unit's StateDirectoryMode: the XMPP server must
		// reach the secret file, and the files keep their own modes.
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("init: %w", err)
		}
		created = append(created, dir)
	}

	raw := make([]byte, initSecretBytes)
	if _, err := rand.Read(raw); err != nil {
		return fmt.Errorf("init: secret: %w", err)
	}
	secret := hex.EncodeToString(raw)
	if err := writeNew(paths[1], []byte(secret+"\n"), 0o600); err != nil {
		return err
	}
	created = append(created, paths[1])
	tls := !loopback.Host(host)
	if err := writeNew(paths[0], []byte(starterConfig(d.Domainpart(), *server, tls)), 0o640); err != nil {
		return err
	}
	created = append(created, paths[0])
	// The configuration must load as written, or init has failed.
	adm, err := app.LoadAdmin(paths[0])
	if err != nil {
		return fmt.Errorf("init: the written configuration does not load: %w", err)
	}
	// An empty file is an empty SQLite database; creating it here gives it
	// (and the -wal and -shm files SQLite derives from it) mode 0600.
	if err := writeNew(paths[2], nil, 0o600); err != nil {
		return err
	}
	created = append(created, paths[2], paths[2]+"-wal", paths[2]+"-shm")
	if err := adm.OpenStore(ctx, nil); err != nil {
		return fmt.Errorf("init: %w", err)
	}
	if err := adm.Close(); err != nil {
		return fmt.Errorf("init: %w", err)
	}
	// The tools' work directories, one 0700 directory each, apart from
	// the files above: a sandboxed tool is given its own and nothing else
	// of this directory (docs/deploy.md).
	runDir := filepath.Join(dir, initRunName)
	if err := os.Mkdir(runDir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("init: %w", err)
	}

	fmt.Fprintf(stdout, "wrote %s\nwrote %s (mode 0600; the secret is not shown)\nwrote %s (empty database)\nmade %s (0700: the tools' work directories)\n\n", paths[0], paths[1], paths[2], runDir)
	printServerSnippets(stdout, d.Domainpart(), host, port, paths[1])
	fmt.Fprintf(stdout, "Then check and start the gateway:\n  agentgw check-config -config %s\n  agentgw serve -config %s   (or: systemctl enable --now agentgw)\n", paths[0], paths[0])
	return nil
}

// writeNew creates path with data, failing if it exists.
func writeNew(path string, data []byte, perm os.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return fmt.Errorf("init: %w", err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		os.Remove(path)
		return fmt.Errorf("init: %w", err)
	}
	if err := f.Close(); err != nil {
		os.Remove(path)
		return fmt.Errorf("init: %w", err)
	}
	return nil
}

// Section headers of init's output; tests find the snippets by them.
const (
	prosodyHeader  = "== Prosody"
	ejabberdHeader = "== ejabberd"
	openfireHeader = "== Openfire"
)

// printServerSnippets prints the external component declarations for
// Prosody, ejabberd and Openfire. Prosody reads the secret from its file
// when it loads its configuration (its config is Lua), so the secret never
// appears; ejabberd's YAML cannot, so its snippet has a placeholder and a
// one-liner that fills it in from the file.
func printServerSnippets(w io.Writer, domain, host, port, secretFile string) {
	confd := "/etc/prosody/conf.d/" + domain + ".cfg.lua"
	fmt.Fprintf(w, "%s 0.12: save this as %s (Debian's prosody.cfg.lua includes conf.d/*.cfg.lua), then run: systemctl restart prosody (a reload does not open the component port)\n", prosodyHeader, confd)
	fmt.Fprintf(w, "-- agentgw: the XEP-0114 external component %s.\n", domain)
	fmt.Fprintln(w, "-- Global settings (this file is included on its own, so they stay global).")
	fmt.Fprintln(w, "-- Nagle off: Prosody writes a large stanza to a client in two parts, and with")
	fmt.Fprintln(w, "-- Nagle on the second waits ~40 ms for the client's delayed ACK (docs/deploy.md).")
	fmt.Fprintln(w, "network_settings = { nagle = false }")
	if port != defaultComponentPort || !loopback.Host(host) {
		fmt.Fprintf(w, "component_ports = { %s }\n", port)
		iface := host
		if net.ParseIP(host) == nil && !loopback.Host(host) {
			iface = "*" // a name: Prosody listens on addresses
		}
		if !loopback.Host(host) {
			fmt.Fprintln(w, "-- agentgw connects from another machine: listen where it can reach, and")
			fmt.Fprintln(w, "-- firewall the port to agentgw's address (see docs/deploy.md).")
		}
		fmt.Fprintf(w, "component_interfaces = { %s }\n", lua.Quote(iface))
	}
	fmt.Fprintf(w, "Component %s\n", lua.Quote(domain))
	fmt.Fprintf(w, "\t-- The shared secret is read from agentgw's secret file whenever Prosody loads\n")
	fmt.Fprintf(w, "\t-- its configuration; the prosody user must be able to reach and read it (o+x\n")
	fmt.Fprintf(w, "\t-- lets it enter the directory, which the Debian package makes 0750), e.g.:\n")
	fmt.Fprintf(w, "\t--   chgrp prosody %s && chmod 0640 %s && chmod o+x %s\n", secretFile, secretFile, filepath.Dir(secretFile))
	fmt.Fprintf(w, "\tcomponent_secret = assert(io.open(%s)):read(\"*l\")\n", lua.Quote(secretFile))
	fmt.Fprintln(w)

	fmt.Fprintf(w, "%s: add this under listen: in /etc/ejabberd/ejabberd.yml\n", ejabberdHeader)
	fmt.Fprintf(w, "  -\n    port: %s\n    ip: %s\n    module: ejabberd_service\n    hosts:\n      %s:\n        password: \"@AGENTGW_SECRET@\"\n",
		port, strconv.Quote(host), strconv.Quote(domain))
	fmt.Fprintf(w, "then put the secret in place of the placeholder, without showing it, and reload:\n")
	fmt.Fprintf(w, "  sed -i \"s/@AGENTGW_SECRET@/$(cat %s)/\" /etc/ejabberd/ejabberd.yml && ejabberdctl reload_config\n\n", secretFile)

	fmt.Fprintf(w, "%s: Server > Server Settings > External Components: enable, port %s; allowed component:\n", openfireHeader, port)
	fmt.Fprintf(w, "  subdomain %s, shared secret: the content of %s\n\n", strings.SplitN(domain, ".", 2)[0], secretFile)
}

// starterConfig is the configuration init writes: only what a first start
// needs, commented, with the policy denying everything until the operator
// writes grants. config.example.toml documents every other key.
func starterConfig(domain, server string, tls bool) string {
	parent := domain
	if _, rest, ok := strings.Cut(domain, "."); ok && strings.Contains(rest, ".") {
		parent = rest
	}
	tlsLine := "tls = false"
	if tls {
		tlsLine = "tls = true   # the server is not on loopback: direct TLS, certificate verified"
	}
	return fmt.Sprintf(`# agentgw configuration, written by agentgw init.
# config.example.toml (in the source, or docs/deploy.md) documents every key
# with its default. Check changes with: agentgw check-config -config FILE
# SIGHUP (systemctl reload agentgw) reloads [policy]; other tables need a restart.

[component]
# The XEP-0114 component domain agentgw answers for; endpoints are bare JIDs
# under it (weather@%[1]s).
domain = %[1]q
# host:port of the XMPP server's component listener.
server = %[2]q
# The shared secret, alone on the first line of this file (relative to this
# file's folder). Never put it here in clear.
secret_file = %[3]q
# Plaintext is allowed only to a loopback address; set tls = true (and
# maybe tls_ca_file) for a server on another machine.
%[4]s

[gateway]
# The disco#info identity name of the gateway.
name = "Agent Gateway"

[database]
# SQLite database, relative to this file's folder. Back it up with:
# sqlite3 agentgw.db ".backup agentgw-backup.db" (see docs/deploy.md).
path = %[5]q

[log]
# debug, info, warn or error.
level = "info"
# "text" (key=value lines) or "json" (one object a line, for a log shipper).
format = "text"

[policy]
# Denies by default: until you add grants, nobody sees or invokes anything.
# Principals are domains ("%[6]s": every account there) or bare JIDs.
# Domains whose accounts are this deployment's own users:
local_domains = []
# Bare JIDs allowed to provision endpoints over XMPP (docs/provisioning.md).
admins = []

# Who may see which endpoints (directory, search, vCard, presence, manifests):
# [[policy.visibility]]
# principals = [%[6]q]
# endpoints = ["*"]

# Who may invoke which tools:
# [[policy.invoke]]
# principals = [%[6]q]
# endpoints = ["demo@%[1]s"]
# tools = ["*"]

# Hosted endpoints and their runtimes (builtin, exec, mcp; see
# config.example.toml and docs/mcp.md). The builtin demo tools:
# [[endpoint]]
# jid = "demo@%[1]s"
# runtime = "builtin"
`, domain, server, initSecretName, tlsLine, initDBName, parent)
}
