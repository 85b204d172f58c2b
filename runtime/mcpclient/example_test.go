package mcpclient_test

import (
	"context"
	"fmt"

	"agentgw/manifest"
	"agentgw/runtime/mcpclient"
	"agentgw/runtime/mcpclient/mcptest"
)

// Import builds an endpoint manifest from an MCP server's tools/list.
// Here the server is the in-memory fixture; an endpoint would set Command
// (stdio) or URL (Streamable HTTP) instead of Dial.
func ExampleRuntime_Import() {
	srv := mcptest.New(mcptest.Options{})
	r, err := mcpclient.New(mcpclient.Options{Dial: srv.Dial, ColdStart: true})
	if err != nil {
		panic(err)
	}
	defer r.Close()
	imp, err := r.Import(context.Background(), "tools@agents.example")
	if err != nil {
		panic(err)
	}
	m, err := manifest.Parse(imp.Manifest, manifest.Options{Domain: "agents.example"})
	if err != nil {
		panic(err)
	}
	fmt.Println(len(m.Tools), "tools from", m.ImplementationName, m.ImplementationVersion)
	for _, s := range imp.Skipped {
		fmt.Printf("skipped %s: %s\n", s.Tool, s.Reason)
	}
	// Output:
	// 10 tools from mcptest 1.2.3
	// skipped lookbehind: inputSchema/properties/x/pattern: regular expression not supported: lookaround (patterns use Go RE2 syntax, which has no lookaround or backreferences)
	// skipped untranslatable: inputSchema: draft-07 schema has no exact JSON Schema 2020-12 form: (root): keyword $defs is not part of draft-07
}
