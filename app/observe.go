package app

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"time"

	"agentgw/config"
	"agentgw/db"
	"agentgw/metrics"
)

// scrapeTimeout bounds the store query behind the agentgw_tasks gauge.
const scrapeTimeout = 2 * time.Second

// newLogger builds the one logger of a command from [log]: level, and
// text or JSON. serve and mcp alike log through it.
func newLogger(cfg config.Log, w io.Writer) *slog.Logger {
	level, _ := config.LogLevel(cfg.LogLevel)
	opts := &slog.HandlerOptions{Level: level}
	if cfg.LogFormat == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// startMetrics starts the [metrics] listener when one is configured, until
// ctx ends. Nothing listens otherwise.
func startMetrics(ctx context.Context, cfg *config.Config, store *db.Store, log *slog.Logger) error {
	if cfg.MetricsListen == "" {
		return nil
	}
	metrics.Tasks.Set(func() map[string]float64 {
		qctx, cancel := context.WithTimeout(ctx, scrapeTimeout)
		defer cancel()
		states, err := store.TaskStates(qctx)
		if err != nil {
			log.Warn("metrics: task states", "err", err)
			return nil
		}
		out := make(map[string]float64, len(states))
		for s, n := range states {
			out[s] = float64(n)
		}
		return out
	})
	addr, err := metrics.Serve(ctx, cfg.MetricsListen)
	if err != nil {
		return fmt.Errorf("metrics.listen: %w", err)
	}
	log.Info("metrics listening", "addr", "http://"+addr.String()+"/metrics")
	return nil
}
