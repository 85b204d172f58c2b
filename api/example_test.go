package api_test

import (
	"fmt"

	"agentgw/api"
	"agentgw/wire"
)

// A client pins a manifest: it asks for the active version, checks that the
// canonical JSON hashes to the advertised value, and uses the version and
// hash for every later request.
func Example() {
	req, _ := wire.Marshal(api.ManifestRequest{}.TokenReader())
	fmt.Println(req)

	// The endpoint's answer (ProtoXEP "Manifest Retrieval").
	el, _ := wire.Parse(`<manifest xmlns='urn:xmpp:agent-api:0' media-type='application/json' version='1.4.0'>` +
		`<hash xmlns='urn:xmpp:hashes:2' algo='sha-256'>K2/YdwvIBAlfUIeZHiNCyiYA4m4W2wrEOqXQDoQyXp4=</hash>` +
		`<json>{"agent":{"jid":"weather@agents.example","name":"weather","version":"1.4.0"},"manifestSpecVersion":"0","tools":[]}</json>` +
		`</manifest>`)
	m, err := api.ParseManifest(el)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(m.Version, api.VerifyJSON(m.JSON, m.Hash))

	// The pinned version and hash select a schema.
	sr, _ := wire.Marshal(api.SchemaRequest{Tool: "forecast.get", Version: m.Version, Direction: api.DirectionInput, Hash: m.Hash}.TokenReader())
	fmt.Println(sr)
	// Output:
	// <manifest-request xmlns='urn:xmpp:agent-api:0'/>
	// 1.4.0 true
	// <schema-request direction='input' tool='forecast.get' version='1.4.0' xmlns='urn:xmpp:agent-api:0'><hash algo='sha-256' xmlns='urn:xmpp:hashes:2'>K2/YdwvIBAlfUIeZHiNCyiYA4m4W2wrEOqXQDoQyXp4=</hash></schema-request>
}
