package app

import (
	"context"
	"log/slog"

	"agentgw/chat"
	"agentgw/config"
	"agentgw/db"
	"agentgw/gateway"
)

// StartChat starts the Human Messaging profile (package chat) for every
// [[endpoint]] whose chat is not off, and attaches it to the gateway. It
// returns nil, and attaches nothing, when no endpoint chats: every message
// then bounces. Close the result after the gateway has stopped.
func StartChat(ctx context.Context, cfg *config.Config, store *db.Store, gw *gateway.Gateway, log *slog.Logger) *chat.Service {
	if len(cfg.Chat.Endpoints) == 0 {
		return nil
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	eps := make(map[string]chat.Endpoint, len(cfg.Chat.Endpoints))
	for jid, mode := range cfg.Chat.Endpoints {
		switch mode {
		case config.ChatBuiltin:
			eps[jid] = chat.Endpoint{Answerer: chat.Builtin{Store: store}}
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
	return svc
}
