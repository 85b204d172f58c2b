// Package app is the composition root of agentgw: from a loaded
// configuration it builds the store, the policy, the runtimes and the
// services, and wires them together for `agentgw serve` (Serve). The
// packages below it take values and interfaces: taskd knows nothing of
// config, mcpsync or the runtime kinds, which are chosen here (Runtimes).
package app

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"
	"time"

	"agentgw/config"
	"agentgw/db"
	"agentgw/gateway"
	"agentgw/runtime/sandbox"
	"agentgw/taskd"
)

// serveGCPercent is the Go collector's target of agentgw serve (GOGC).
const serveGCPercent = 50

// Serve is `agentgw serve`: it loads the configuration at path and builds,
// in order, the logger, the store (checked), the process recorder (which
// first kills what a previous run left of its tools), the metrics
// listener, the gateway with its policy, the runtime of every
// [[endpoint]], and the task service; then it serves the component stream
// until ctx ends, applying a changed policy on SIGHUP. It tears down in
// the reverse order.
func Serve(ctx context.Context, path string, stderr io.Writer) error {
	// The Go heap may grow to 1.5 times what is live between collections,
	// not twice (GOGC=100): an idle gateway's live heap is about a
	// megabyte, and the pages a burst touched up to the runtime's 4 MB
	// minimum goal left more anonymous memory behind after the idle
	// release (docs/BENCHMARKS.md, "Spread reads and memory after load").
	// The GOGC environment variable still decides when set.
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(serveGCPercent)
	}
	cfg, err := config.Load(path)
	if err != nil {
		return err
	}
	log := newLogger(cfg.Log, stderr)

	store, err := openStore(ctx, cfg.Database)
	if err != nil {
		return err
	}
	defer store.Close()
	if m := store.Migrated(); m.Backup != "" {
		log.Info("database migrated", "path", cfg.Database.Redacted(), "from_schema", m.From, "to_schema", m.To, "backup", m.Backup)
	}
	if err := store.Check(ctx); err != nil {
		return err
	}
	// The quota counters are derived: a drift from their sums is rebuilt,
	// and said.
	if drift, err := store.CheckCounters(ctx); err != nil {
		return err
	} else if len(drift) > 0 {
		log.Warn("start: quota counters differed from the stored rows and were rebuilt", "counters", drift)
	}
	// What a previous run that died left of its tools is killed before
	// any runtime starts or task is recovered.
	procs := taskd.NewProcessRecorder(store, log)
	if err := procs.KillStale(ctx); err != nil {
		log.Error("start: stale runtime processes", "err", err)
	}
	defer procs.Wait()
	mctx, stopMetrics := context.WithCancel(ctx)
	defer stopMetrics()
	if err := startMetrics(mctx, cfg, store, log); err != nil {
		return err
	}
	sb, err := PlanSandbox(cfg, sandbox.ABI())
	if err != nil {
		return err
	}
	sb.announce(cfg.Sandbox, hasChildren(cfg), log)
	gw := gateway.New(GatewayOptions(cfg), store, log)
	stateDir := cfg.StateDir
	hosted, err := Runtimes(ctx, store, cfg.Endpoints, RuntimeOptions{Availability: gw.Availability(), Log: log, Tracker: procs,
		StateDir: stateDir, Sandbox: sb})
	if err != nil {
		return err
	}
	// Deferred in this order, so that they run in the reverse: executions
	// stop and queued commits finish, then the MCP servers stop, then the
	// store closes.
	defer hosted.Close()
	tasks, err := startTasks(ctx, cfg, store, gw, hosted, log)
	if err != nil {
		return err
	}
	defer tasks.Close()
	chats, err := StartChat(ctx, cfg, store, gw, log, procs, sb, stateDir)
	if err != nil {
		return err
	}
	if chats != nil {
		defer chats.Close()
	}

	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-hup:
				reload(path, cfg, gw, log)
			}
		}
	}()
	log.Info("agentgw starting", "config", path, "domain", cfg.Domain.String(), "database", cfg.Database.Redacted())
	err = gw.Run(ctx)
	log.Info("agentgw stopped")
	return err
}

// GatewayOptions is what the gateway reads of cfg: the [component] and
// [gateway] tables, the quotas it enforces, the policy, and the mcp
// endpoints with cold_start_supported = true. A SIGHUP changes only the
// policy (reload), so the rest is read once, here.
func GatewayOptions(cfg *config.Config) gateway.Options {
	coldStart := map[string]bool{}
	for _, ep := range cfg.Endpoints {
		if ep.MCP != nil && ep.MCP.ColdStart {
			coldStart[ep.JID] = true
		}
	}
	return gateway.Options{
		Stream:    gateway.Stream(cfg.Component),
		Service:   gateway.Service(cfg.Gateway),
		Quotas:    gateway.Quotas(cfg.Quotas),
		DebugXML:  cfg.DebugXML,
		Policy:    cfg.Policy,
		ColdStart: coldStart,
	}
}

// TaskOptions is what the task service reads of cfg: the [tasks] and
// [quotas] tables, and the replay window of [gateway].
func TaskOptions(cfg *config.Config) taskd.Options {
	return taskd.Options{
		Limits:       taskd.Limits(cfg.Tasks),
		Quotas:       taskd.Quotas(cfg.Quotas),
		ReplayWindow: time.Duration(cfg.RequestReplaySeconds) * time.Second,
	}
}

// startTasks starts the task service over the runtime of every
// [[endpoint]] (Runtimes) with the [tasks] limits, attaches it to the
// gateway and recovers the tasks a previous run left unsettled.
func startTasks(ctx context.Context, cfg *config.Config, store *db.Store, gw *gateway.Gateway, hosted *Hosted, log *slog.Logger) (*taskd.Service, error) {
	opts := TaskOptions(cfg)
	opts.Runtimes = hosted.Runtimes
	opts.Notify = gw.SendEvent
	opts.Ready = gw.WaitConnected
	opts.Availability = hosted.Availability(gw.Availability())
	opts.Log = log
	tasks, err := taskd.New(store, opts)
	if err != nil {
		return nil, err
	}
	gw.AttachTasks(tasks)
	if err := tasks.Start(ctx); err != nil {
		tasks.Close()
		return nil, err
	}
	log.Info("tasks ready", "endpoints", len(hosted.Runtimes), "active", tasks.Active())
	return tasks, nil
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
	log.Info("reload: policy applied", "visibility_grants", len(cfg.Policy.Visibility), "invoke_grants", len(cfg.Policy.Invoke),
		"admins", len(cfg.Policy.Admins), "self_register", cfg.Policy.SelfRegister)
}
