package cli

import (
	"context"
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"text/tabwriter"

	"agentgw/config"
	"agentgw/db"
	"agentgw/gateway"
	"agentgw/manifest"
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
	cfg, err := config.Load(*path)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "ok: %s\n", cfg)
	return nil
}

// readManifest validates a manifest file, under the component domain when
// cfg is not nil.
func readManifest(path string, cfg *config.Config) (*manifest.Manifest, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	opts := manifest.Options{}
	if cfg != nil {
		opts.Domain = cfg.Domain.Domainpart()
	}
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
	var cfg *config.Config
	if *path != "" {
		if cfg, err = config.Load(*path); err != nil {
			return err
		}
	}
	m, err := readManifest(pos[0], cfg)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s %s sha-256 %s\n", m.JID, m.Version, m.HashBase64())
	return nil
}

func openStore(ctx context.Context, path string) (*config.Config, *db.Store, error) {
	cfg, err := config.Load(path)
	if err != nil {
		return nil, nil, err
	}
	store, err := db.Open(ctx, cfg.DatabasePath)
	if err != nil {
		return nil, nil, err
	}
	return cfg, store, nil
}

func endpoint(ctx context.Context, sub string, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("endpoint "+sub, flag.ContinueOnError)
	path := fs.String("config", "", "configuration file")
	var activate *bool
	var minPos, maxPos int
	switch sub {
	case "register":
		activate = fs.Bool("activate", false, "activate the registered version")
		minPos, maxPos = 1, 1
	case "activate":
		minPos, maxPos = 2, 2
	case "deactivate", "status":
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
	cfg, store, err := openStore(ctx, *path)
	if err != nil {
		return err
	}
	defer store.Close()

	switch sub {
	case "register":
		return register(ctx, cfg, store, pos[0], *activate, stdout)
	case "activate":
		j, err := endpointJID(cfg, pos[0])
		if err != nil {
			return err
		}
		if err := store.Activate(ctx, j, pos[1], nil); err != nil {
			return storeError(err, j, pos[1])
		}
		fmt.Fprintf(stdout, "activated %s %s\n", j, pos[1])
	case "deactivate":
		j, err := endpointJID(cfg, pos[0])
		if err != nil {
			return err
		}
		if err := store.Deactivate(ctx, j); err != nil {
			return storeError(err, j, "")
		}
		fmt.Fprintf(stdout, "deactivated %s\n", j)
	case "status":
		j, err := endpointJID(cfg, pos[0])
		if err != nil {
			return err
		}
		st, err := store.Status(ctx, j)
		if err != nil {
			return storeError(err, j, "")
		}
		printStatus(stdout, st)
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

func register(ctx context.Context, cfg *config.Config, store *db.Store, file string, activate bool, stdout io.Writer) error {
	m, err := readManifest(file, cfg)
	if err != nil {
		return err
	}
	v := db.Version{
		JID: m.JID, Version: m.Version, Hash: m.Hash, Canonical: m.Canonical,
		Name: m.Name, Title: m.Title, Description: m.Description,
	}
	created, err := store.RegisterVersion(ctx, v, "admin")
	if err != nil {
		return storeError(err, m.JID, m.Version)
	}
	word := "registered"
	if !created {
		word = "unchanged"
	}
	fmt.Fprintf(stdout, "%s %s %s sha-256 %s\n", word, m.JID, m.Version, m.HashBase64())
	if activate {
		if err := store.Activate(ctx, m.JID, m.Version, &m.Hash); err != nil {
			return storeError(err, m.JID, m.Version)
		}
		fmt.Fprintf(stdout, "activated %s %s\n", m.JID, m.Version)
	}
	return nil
}

func printStatus(w io.Writer, st db.EndpointStatus) {
	active := st.Active
	if active == "" {
		active = "(inactive)"
	}
	fmt.Fprintf(w, "jid: %s\norigin: %s\nactive: %s\nversions:\n", st.JID, st.Origin, active)
	for _, v := range st.Versions {
		mark := " "
		if v.Version == st.Active {
			mark = "*"
		}
		fmt.Fprintf(w, " %s %s sha-256 %s registered %s\n", mark, v.Version,
			base64.StdEncoding.EncodeToString(v.Hash[:]), v.CreatedAt.UTC().Format("2006-01-02T15:04:05Z"))
	}
}

// storeError rewords store errors for an operator.
func storeError(err error, jid, version string) error {
	switch {
	case errors.Is(err, db.ErrNotFound) && version != "":
		return fmt.Errorf("%s has no version %s", jid, version)
	case errors.Is(err, db.ErrNotFound):
		return fmt.Errorf("no endpoint %s", jid)
	case errors.Is(err, db.ErrConflict):
		return fmt.Errorf("version %s of %s is already registered with different content; register it under a new version", version, jid)
	}
	return err
}

// endpointJID normalizes an endpoint JID given on the command line.
func endpointJID(cfg *config.Config, s string) (string, error) {
	j, err := parseBareUnder(s, cfg.Domain.Domainpart())
	if err != nil {
		return "", fmt.Errorf("%q: %w", s, err)
	}
	return j, nil
}

func serve(ctx context.Context, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	path := fs.String("config", "", "configuration file")
	if _, err := parse(fs, args, 0, 0); err != nil {
		return err
	}
	if err := requireConfig("serve", *path); err != nil {
		return err
	}
	cfg, err := config.Load(*path)
	if err != nil {
		return err
	}
	level := map[string]slog.Level{"debug": slog.LevelDebug, "info": slog.LevelInfo, "warn": slog.LevelWarn, "error": slog.LevelError}[cfg.LogLevel]
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))

	store, err := db.Open(ctx, cfg.DatabasePath)
	if err != nil {
		return err
	}
	defer store.Close()
	gw := gateway.New(cfg, store, log)

	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-hup:
				reload(*path, cfg, gw, log)
			}
		}
	}()
	log.Info("agentgw starting", "config", *path, "domain", cfg.Domain.String(), "database", cfg.DatabasePath)
	err = gw.Run(ctx)
	log.Info("agentgw stopped")
	return err
}

// reload applies a changed policy on SIGHUP. A bad file keeps the policy in
// force and logs every problem; changes outside [policy] need a restart.
func reload(path string, running *config.Config, gw *gateway.Gateway, log *slog.Logger) {
	cfg, err := config.Load(path)
	if err != nil {
		var errs config.Errors
		if errors.As(err, &errs) {
			for _, e := range errs {
				log.Error("reload: keeping the running configuration", "problem", e.Error())
			}
		} else {
			log.Error("reload: keeping the running configuration", "problem", err.Error())
		}
		return
	}
	gw.SetPolicy(cfg.Policy)
	if cfg.String() != running.String() || string(cfg.Secret) != string(running.Secret) {
		log.Warn("reload: only [policy] is applied without a restart")
	}
	log.Info("reload: policy applied", "visibility_grants", len(cfg.Policy.Visibility), "invoke_grants", len(cfg.Policy.Invoke))
}
