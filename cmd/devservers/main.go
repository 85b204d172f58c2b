// Command devservers starts the agentgw test servers (Prosody with the
// agents.example component port, optionally ejabberd federated with it) on
// loopback, prints their addresses and the component secret as JSON on
// stdout, and runs until SIGINT or SIGTERM, then stops them.
//
//	go run ./cmd/devservers [-ejabberd] [-dir DIR] [-user alice@home.example:secret]...
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"agentgw/internal/harness"
)

// users collects repeated -user flags.
type users []string

func (u *users) String() string { return strings.Join(*u, ",") }

func (u *users) Set(s string) error {
	j, pw, ok := strings.Cut(s, ":")
	local, domain, ok2 := strings.Cut(j, "@")
	if !ok || !ok2 || local == "" || domain == "" || pw == "" {
		return errors.New("want localpart@domain:password")
	}
	*u = append(*u, s)
	return nil
}

// output is what devservers prints: the environment plus process ids and
// the accounts created.
type output struct {
	*harness.Env
	PIDs  map[string]int `json:"pids"`
	Users []string       `json:"users,omitempty"`
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "devservers:", err)
		os.Exit(1)
	}
}

func run() error {
	var (
		opts    harness.Options
		accts   users
		timeout time.Duration
	)
	flag.BoolVar(&opts.Ejabberd, "ejabberd", false, "also start ejabberd for remote.example, federated over s2s")
	flag.StringVar(&opts.Dir, "dir", "", "directory for config, data and logs (default: a temporary directory, removed on exit)")
	flag.BoolVar(&opts.KeepDir, "keep", false, "keep the temporary directory on exit")
	flag.BoolVar(&opts.Debug, "debug", false, "debug-level server logs (every stanza)")
	flag.Var(&accts, "user", "create an account, as localpart@domain:password (repeatable)")
	flag.DurationVar(&timeout, "timeout", time.Minute, "how long starting may take")
	flag.Parse()
	if flag.NArg() > 0 {
		return fmt.Errorf("unexpected arguments: %v", flag.Args())
	}

	// Stop on SIGINT/SIGTERM, also while starting.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	sctx, cancel := context.WithTimeout(ctx, timeout)
	env, err := harness.Start(sctx, opts)
	cancel()
	if err != nil {
		return err
	}
	err = serve(ctx, env, accts)
	if serr := env.Stop(); serr != nil {
		err = errors.Join(err, fmt.Errorf("stop: %w", serr))
	}
	return err
}

// serve registers the accounts, prints the environment and waits for ctx.
func serve(ctx context.Context, env *harness.Env, accts users) error {
	var created []string
	for _, a := range accts {
		j, pw, _ := strings.Cut(a, ":")
		local, domain, _ := strings.Cut(j, "@")
		if err := env.Register(ctx, local, domain, pw); err != nil {
			return err
		}
		created = append(created, j)
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(output{Env: env, PIDs: env.PIDs(), Users: created}); err != nil {
		return fmt.Errorf("print: %w", err)
	}
	fmt.Fprintln(os.Stderr, "devservers: ready; stop with Ctrl-C or SIGTERM; logs in", env.Dir)
	<-ctx.Done()
	fmt.Fprintln(os.Stderr, "devservers: stopping")
	return nil
}
