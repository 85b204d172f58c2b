package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"agentgw/agentclient"
	"agentgw/cli/cmdline"
	"agentgw/manifest"
	"agentgw/task"
	"agentgw/wire"

	"mellium.im/xmpp/jid"
)

// pin is the metadata an invocation is pinned to (agentclient.Pin).
type pin = agentclient.Pin

// pinError reports metadata that does not verify.
func pinError(format string, args ...any) error {
	return fmt.Errorf("%w: %s", agentclient.ErrPin, fmt.Sprintf(format, args...))
}

// pinOutOfBand builds a pin from trusted out-of-band data, for a caller
// that may invoke but not see the endpoint: nothing is retrieved. With a
// manifest file, its canonical hash and version must agree with the flags
// given, and arguments are validated against its input schema; with
// version and hash alone, the target is the only validator.
func pinOutOfBand(endpoint jid.JID, toolName, version, hashB64, manifestFile string) (*pin, error) {
	var hash [32]byte
	if hashB64 != "" {
		d, err := wire.ParseHashBase64(hashB64)
		if err != nil {
			return nil, fmt.Errorf("%w: client call: -hash must be the Base64 SHA-256 manifest hash", cmdline.ErrUsage)
		}
		hash = d
	}
	if manifestFile == "" {
		return agentclient.PinFlags(endpoint, version, hash), nil
	}
	raw, err := os.ReadFile(manifestFile)
	if err != nil {
		return nil, fmt.Errorf("client call: -manifest: %w", err)
	}
	m, err := manifest.Parse(raw, manifest.Options{})
	if err != nil {
		return nil, fmt.Errorf("client call: -manifest %s: %w", manifestFile, err)
	}
	if m.JID != endpoint.String() {
		return nil, pinError("%s is the manifest of %s, not %s", manifestFile, m.JID, endpoint)
	}
	if version != "" && version != m.Version {
		return nil, pinError("%s is version %s, not %s", manifestFile, m.Version, version)
	}
	if hashB64 != "" && hash != m.Hash {
		return nil, pinError("%s does not hash to %s", manifestFile, hashB64)
	}
	p, err := agentclient.PinManifest(m, toolName)
	if err != nil && !errors.Is(err, agentclient.ErrNoTool) {
		return nil, fmt.Errorf("client call: -manifest: %w", err)
	}
	return p, err
}

// toolEntry is what tools prints for each tool.
type toolEntry struct {
	Name        string          `json:"name"`
	Title       string          `json:"title,omitempty"`
	Description string          `json:"description,omitempty"`
	Node        string          `json:"node"`
	Features    []string        `json:"features"`
	InputSchema json.RawMessage `json:"inputSchema"`
}

// toolListing is what tools prints.
type toolListing struct {
	Endpoint string      `json:"endpoint"`
	Version  string      `json:"version"`
	Hash     string      `json:"hash"`
	Tools    []toolEntry `json:"tools"`
}

// tools pins the active manifest and lists the tools of that exact
// version (client guide, step 5), paged, with the details the pinned
// manifest gives for each.
func (cmd *clientCmd) tools(ctx context.Context, endpointArgument string) error {
	endpoint, err := endpointArg(endpointArgument)
	if err != nil {
		return err
	}
	if _, err := cmd.ac.CheckEndpoint(ctx, endpoint); err != nil {
		return err
	}
	m, err := cmd.ac.Manifest(ctx, endpoint)
	if err != nil {
		return err
	}
	out := toolListing{Endpoint: endpoint.String(), Version: m.Version, Hash: m.HashBase64(), Tools: []toolEntry{}}
	nodes, err := cmd.ac.Tools(ctx, m)
	if err != nil {
		return err
	}
	for _, n := range nodes {
		t := n.Tool
		out.Tools = append(out.Tools, toolEntry{
			Name: t.Name, Title: t.Title, Description: t.Description, Node: n.Node,
			Features: task.ToolFeatures(t), InputSchema: t.InputSchema,
		})
	}
	if cmd.json {
		return cmd.emit(out)
	}
	cmd.printf("%s version %s (sha-256 %s): %d tools\n", out.Endpoint, agentclient.SafeText(out.Version, 64), out.Hash, len(out.Tools))
	for _, t := range out.Tools {
		cmd.printf("  %s", agentclient.SafeText(t.Name, 100))
		if t.Title != "" {
			cmd.printf(" (%s)", agentclient.SafeText(t.Title, 100))
		}
		cmd.printf("\n")
		if t.Description != "" {
			cmd.printf("    %s\n", agentclient.SafeText(t.Description, 400))
		}
		if len(t.Features) > 0 {
			cmd.printf("    features: %s\n", agentclient.SafeText(fmt.Sprint(t.Features), 400))
		}
		cmd.printf("    input: %s\n", agentclient.SafeText(string(t.InputSchema), 400))
	}
	return nil
}
