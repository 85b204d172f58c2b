package chat

import (
	"context"
	"encoding/json"
	"errors"
	"strings"

	"agentgw/db"
)

// Builtin is the demo answerer (chat = "builtin"): it needs no model. It
// echoes the text and names the endpoint's tools, from its active
// manifest, so that tests and scripts/demo can show a conversation.
type Builtin struct {
	Store *db.Store
}

// Answer implements Answerer.
func (b Builtin) Answer(ctx context.Context, endpoint string, c Conversation) ([]string, error) {
	tools, err := b.tools(ctx, endpoint)
	if err != nil {
		return nil, err
	}
	list := "I have no tools."
	if len(tools) > 0 {
		list = "My tools: " + strings.Join(tools, ", ") + "."
	}
	return []string{"You said: " + c.Text + "\n" + list}, nil
}

func (b Builtin) tools(ctx context.Context, endpoint string) ([]string, error) {
	v, err := b.Store.ActiveVersion(ctx, endpoint)
	if errors.Is(err, db.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var m struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(v.Canonical, &m); err != nil {
		return nil, err
	}
	names := make([]string, 0, len(m.Tools))
	for _, t := range m.Tools {
		names = append(names, t.Name)
	}
	return names, nil
}
