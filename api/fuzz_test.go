package api_test

import (
	"encoding/xml"
	"testing"

	"agentgw/api"
	"agentgw/internal/fuzztest"
	"agentgw/wire"
)

// The agent-api request elements the gateway parses from any sender, and
// the answers a client parses. Seeds are in testdata/fuzz.

func FuzzParseRegister(f *testing.F) {
	fuzztest.Element(f, nil, api.ParseRegister)
}

func FuzzParseActivate(f *testing.F) {
	fuzztest.Element(f, nil, api.ParseActivate)
}

// FuzzParseEndpointOp covers deactivate, registration-status and
// remove-endpoint, which share a type.
func FuzzParseEndpointOp(f *testing.F) {
	fuzztest.Element(f, []string{
		`<deactivate jid='w@agents.example' xmlns='urn:xmpp:agent-api:0'/>`,
		`<registration-status jid='w@agents.example' xmlns='urn:xmpp:agent-api:0'/>`,
		`<remove-endpoint jid='w@agents.example' xmlns='urn:xmpp:agent-api:0'/>`,
	}, func(el wire.Element) (api.EndpointOp, error) {
		return api.ParseEndpointOp(el, xml.Name{Space: api.NS, Local: el.Start.Name.Local})
	})
}

func FuzzParseRemoveVersion(f *testing.F) {
	fuzztest.Element(f, []string{
		`<remove-version jid='w@agents.example' version='1' xmlns='urn:xmpp:agent-api:0'/>`,
	}, api.ParseRemoveVersion)
}

func FuzzParseManifestRequest(f *testing.F) {
	fuzztest.Element(f, nil, api.ParseManifestRequest)
}

func FuzzParseSchemaRequest(f *testing.F) {
	fuzztest.Element(f, nil, api.ParseSchemaRequest)
}

// FuzzParseAnswer covers every answer element a client parses, by name.
func FuzzParseAnswer(f *testing.F) {
	fuzztest.Element(f, nil, func(el wire.Element) (any, error) {
		switch el.Start.Name.Local {
		case "registered":
			return api.ParseRegistered(el)
		case "active":
			return api.ParseActive(el)
		case "removed":
			return api.ParseRemoved(el)
		case "registration":
			return api.ParseRegistration(el)
		case "manifest":
			return api.ParseManifest(el)
		case "schema":
			return api.ParseSchema(el)
		case "deactivated":
			return api.ParseEndpointOp(el, xml.Name{Space: api.NS, Local: "deactivated"})
		}
		return api.ParseHash(el)
	})
}
