package builtin

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"

	"agentgw/manifest"
)

// VersionPrefix starts the API version of every generated manifest; the
// rest is the first 12 hex digits of the SHA-256 of the manifest's RFC
// 8785 form with the version set to the bare prefix.
const VersionPrefix = "demo"

// Timeouts the demo tools declare, in seconds.
const (
	echoTimeout     = 10
	countTimeout    = 600
	countMaxTimeout = 86400
	askTimeout      = 3600
	askMaxTimeout   = 86400
)

// tools returns the demo tool definitions, in manifest order.
func tools() []map[string]any {
	obj := func(props map[string]any, required ...string) map[string]any {
		return map[string]any{"type": "object", "properties": props, "required": required, "additionalProperties": false}
	}
	str := map[string]any{"type": "string", "maxLength": 4096}
	ext := func(progress, cancel, input bool, def, max int) map[string]any {
		return map[string]any{
			"supportsProgress": progress, "supportsCancellation": cancel, "supportsInput": input,
			"defaultTimeoutSeconds": def, "maximumTimeoutSeconds": max,
			"tags": []string{"demo"},
		}
	}
	return []map[string]any{
		{
			"name":         ToolEcho,
			"title":        "Echo (demo)",
			"description":  "Demo tool: returns the text it is given.",
			"inputSchema":  obj(map[string]any{"text": str}, "text"),
			"outputSchema": obj(map[string]any{"text": map[string]any{"type": "string"}}, "text"),
			"annotations":  map[string]any{"readOnlyHint": true, "destructiveHint": false, "idempotentHint": true, "openWorldHint": false},
			manifest.NS:    ext(false, false, false, echoTimeout, echoTimeout),
		},
		{
			"name":        ToolCount,
			"title":       "Count (demo)",
			"description": "Demo tool: counts to a number, one step per interval, reporting progress; can be cancelled.",
			"inputSchema": map[string]any{
				"type": "object",
				"properties": map[string]any{
					"to":          map[string]any{"type": "integer", "minimum": 0, "maximum": 1000},
					"interval_ms": map[string]any{"type": "integer", "minimum": 0, "maximum": 60000},
				},
				"required":             []string{"to"},
				"additionalProperties": false,
			},
			"outputSchema": obj(map[string]any{"counted": map[string]any{"type": "integer", "minimum": 0}}, "counted"),
			"annotations":  map[string]any{"readOnlyHint": true, "destructiveHint": false, "idempotentHint": true, "openWorldHint": false},
			manifest.NS:    ext(true, true, false, countTimeout, countMaxTimeout),
		},
		{
			"name":         ToolAsk,
			"title":        "Ask (demo)",
			"description":  "Demo tool: asks the caller a question and returns the answer.",
			"inputSchema":  obj(map[string]any{"question": map[string]any{"type": "string", "minLength": 1, "maxLength": 4096}}, "question"),
			"outputSchema": obj(map[string]any{"answer": map[string]any{"type": "string"}}, "answer"),
			"annotations":  map[string]any{"readOnlyHint": true, "destructiveHint": false, "idempotentHint": false, "openWorldHint": false},
			manifest.NS:    ext(false, true, true, askTimeout, askMaxTimeout),
		},
	}
}

// ManifestJSON returns the manifest of a builtin endpoint at jid (a bare
// JID) in RFC 8785 form. The same jid always gives the same bytes, so its
// version ("demo-" and 12 hex digits) changes exactly when the content
// does.
func ManifestJSON(jid string) ([]byte, error) {
	doc := map[string]any{
		"manifestSpecVersion": manifest.SpecVersion,
		"agent": map[string]any{
			"jid":         jid,
			"name":        "agentgw-demo",
			"title":       title(jid),
			"description": "Demonstration tools built into agentgw (echo, count, ask), for trying the task protocol. Not for production use.",
			"version":     VersionPrefix,
			"vendor":      "agentgw",
		},
		"tools": tools(),
	}
	canon, err := canonical(doc)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(canon)
	doc["agent"].(map[string]any)["version"] = VersionPrefix + "-" + hex.EncodeToString(sum[:])[:12]
	return canonical(doc)
}

// title is the agent title of the builtin endpoint at jid: "Demo Agent
// (builtin)" for demo@…, and the localpart added for any other, so that
// two builtin endpoints of one gateway (the demo's demo@ and chat-demo@)
// are told apart in discover and search.
func title(jid string) string {
	local, _, _ := strings.Cut(jid, "@")
	if local == "demo" || local == "" || local == jid {
		return "Demo Agent (builtin)"
	}
	return "Demo Agent (builtin, " + local + ")"
}

// Manifest returns the validated manifest of a builtin endpoint at jid.
func Manifest(jid string) (*manifest.Manifest, error) {
	raw, err := ManifestJSON(jid)
	if err != nil {
		return nil, err
	}
	m, err := manifest.Parse(raw, manifest.Options{})
	if err != nil {
		return nil, fmt.Errorf("builtin: manifest for %s: %w", jid, err)
	}
	return m, nil
}

func canonical(doc map[string]any) ([]byte, error) {
	raw, err := json.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("builtin: encode manifest: %w", err)
	}
	out, err := manifest.Canonicalize(raw, manifest.Limits{})
	if err != nil {
		return nil, fmt.Errorf("builtin: canonicalize manifest: %w", err)
	}
	return out, nil
}
