package app

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"time"

	"agentgw/chat"
	"agentgw/chatface"
	"agentgw/config"
	"agentgw/db"
	"agentgw/gateway"
	"agentgw/internal/privfile"
	"agentgw/mcpface"
	"agentgw/runtime"
	"agentgw/runtime/exec"
)

// chatExecTimeout bounds one run of a chat = "exec" program
// (docs/limits.md); chatExecReplies the replies it may send.
const (
	chatExecTimeout = 2 * time.Minute
	chatExecReplies = 8
)

// execAnswerer answers with a chat = "exec" program (agentgw-chat/0).
type execAnswerer struct {
	rt  *exec.Runtime
	log *slog.Logger
}

// Answer implements chat.Answerer: the program sees the conversation's
// opaque handle, never a JID.
func (a execAnswerer) Answer(ctx context.Context, endpoint string, c chat.Conversation) ([]string, error) {
	replies, diag, err := a.rt.Chat(ctx, exec.ChatMessage{Conversation: c.Handle, Text: c.Text, Lang: c.Lang}, chatExecReplies, chatExecTimeout)
	if err != nil {
		a.log.Warn("chat: the chat program failed", "endpoint", endpoint, "exit", diag.ExitCode, "note", diag.Note, "stderr", diag.Stderr, "err", err)
	}
	return replies, err
}

// StartChat starts the Human Messaging profile (package chat) for every
// [[endpoint]] whose chat is not off, and attaches it to the gateway. It
// returns nil, and attaches nothing, when no endpoint chats: every message
// then bounces. Close the result after the gateway has stopped.
//
// sb, if set, confines the chat programs (PlanSandbox); their work
// directory is the endpoint's dir, or one under stateDir/run when that is
// set (Runtimes), else a fresh temporary one.
func StartChat(ctx context.Context, cfg *config.Config, store *db.Store, gw *gateway.Gateway, log *slog.Logger, tracker runtime.ProcessTracker, sb *SandboxPlan, stateDir string) (*chat.Service, error) {
	if len(cfg.Chat.Endpoints) == 0 {
		return nil, nil
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	eps := make(map[string]chat.Endpoint, len(cfg.Chat.Endpoints))
	for i, ep := range cfg.Endpoints {
		switch ep.Chat {
		case config.ChatBuiltin:
			eps[ep.JID] = chat.Endpoint{Answerer: chat.Builtin{Store: store}}
		case config.ChatExec:
			dir := ep.Dir
			if dir == "" && stateDir != "" {
				d, err := privfile.WorkDir(filepath.Join(stateDir, "run"), ep.JID)
				if err != nil {
					return nil, fmt.Errorf("endpoint[%d]: working directory: %w", i, err)
				}
				dir = d
			}
			rt, err := exec.New(exec.Options{Command: ep.ChatCommand, Dir: dir, Env: ep.Env, KillGrace: ep.KillGrace, Tracker: tracker,
				Sandbox: sb.Child(ep, false)})
			if err != nil {
				return nil, fmt.Errorf("endpoint[%d].chat_command: %w", i, err)
			}
			eps[ep.JID] = chat.Endpoint{Answerer: execAnswerer{rt: rt, log: log}}
		case config.ChatQueue:
			eps[ep.JID] = chat.Endpoint{Queue: true}
		}
	}
	svc := chat.New(chat.Options{
		Store:     store,
		Send:      gw.SendChat,
		Ready:     gw.WaitConnected,
		Bounce:    gw.BounceChat,
		Endpoints: eps,
		Consent:   cfg.Chat.Consent,
		QueueMax:  cfg.Chat.QueueMax,
		Log:       log,
	})
	svc.Start(ctx)
	gw.AttachChat(svc)
	log.Info("chat ready", "endpoints", len(eps))
	if cfg.Chat.MCPListen != "" {
		if err := serveChatMCP(ctx, cfg, svc, gw, log); err != nil {
			svc.Close()
			return nil, err
		}
	}
	return svc, nil
}

// serveChatMCP serves the queue endpoints to the MCP clients of
// [[chat.token]] at chat.mcp_listen (package chatface) until ctx ends.
func serveChatMCP(ctx context.Context, cfg *config.Config, svc *chat.Service, gw *gateway.Gateway, log *slog.Logger) error {
	var queues []string
	for ep, mode := range cfg.Chat.Endpoints {
		if mode == config.ChatQueue {
			queues = append(queues, ep)
		}
	}
	tokens := make([]chatface.Token, len(cfg.Chat.Tokens))
	for i, t := range cfg.Chat.Tokens {
		tokens[i] = chatface.Token{Value: t.Token, Endpoint: t.Endpoint, Scopes: t.Scopes}
	}
	ln, err := net.Listen("tcp", cfg.Chat.MCPListen)
	if err != nil {
		return fmt.Errorf("chat.mcp_listen: %w", err)
	}
	// The protection of `agentgw mcp -http`: Origin and Host checked on
	// every path, its timeouts and header bound, sessions and waits
	// bounded per token.
	srv := mcpface.NewHTTPServer(chatface.Handler(ctx, chatface.Options{Chat: svc, Policy: gw.Policy, Endpoints: queues, Tokens: tokens, Log: log,
		AllowedOrigins: cfg.Chat.AllowedOrigins, MaxSessionsPerToken: cfg.Chat.MaxSessionsPerToken}))
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	go func() {
		if err := srv.Serve(ln); err != nil && err != http.ErrServerClosed {
			log.Error("chat mcp: listener stopped", "err", err)
		}
	}()
	log.Info("chat mcp listening", "addr", ln.Addr().String(), "path", "/mcp", "endpoints", len(queues), "tokens", len(tokens))
	return nil
}
