package app

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"agentgw/chat"
	"agentgw/config"
	"agentgw/db"
	"agentgw/gateway"
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
func StartChat(ctx context.Context, cfg *config.Config, store *db.Store, gw *gateway.Gateway, log *slog.Logger, tracker runtime.ProcessTracker) (*chat.Service, error) {
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
			rt, err := exec.New(exec.Options{Command: ep.ChatCommand, Dir: ep.Dir, Env: ep.Env, KillGrace: ep.KillGrace, Tracker: tracker})
			if err != nil {
				return nil, fmt.Errorf("endpoint[%d].chat_command: %w", i, err)
			}
			eps[ep.JID] = chat.Endpoint{Answerer: execAnswerer{rt: rt, log: log}}
		}
	}
	svc := chat.New(chat.Options{
		Store:     store,
		Send:      gw.SendChat,
		Ready:     gw.WaitConnected,
		Endpoints: eps,
		Consent:   cfg.Chat.Consent,
		Log:       log,
	})
	svc.Start(ctx)
	gw.AttachChat(svc)
	log.Info("chat ready", "endpoints", len(eps))
	return svc, nil
}
