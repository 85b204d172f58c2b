package gateway

import (
	"agentgw/adhoc"
	"agentgw/api"
	"agentgw/directory"
	"agentgw/legacy"
	"agentgw/ping"
	"agentgw/search"
	"agentgw/task"
	"agentgw/taskd"

	"mellium.im/xmpp/stanza"
)

// surfaces is every IQ the gateway answers and every disco feature it
// advertises, surface by surface, in one ordered list. A payload not listed
// for the addressed kind of JID gets <service-unavailable/>, whether or not
// the endpoint exists. New panics on a route listed twice and on features
// where their surface routes nothing, so what is advertised derives from
// what is routed; the hot reads (fastIQs) and the metrics labels (iqKinds)
// derive from it too. Features that depend on the request are added by the
// handlers: docs/gateway.md, "The surface table".
var surfaces = []protocol{{
	// The tool collection, tool nodes (agent API) and command nodes
	// (ad-hoc) arrive through these disco handlers, which hand a node on.
	name: "Core Directory (package directory)",
	gateway: []iqRoute{
		{stanza.GetIQ, nameDiscoInfo, gatewayDiscoInfo},
		{stanza.GetIQ, nameDiscoItems, gatewayDiscoItems},
	},
	endpoint: []iqRoute{
		{stanza.GetIQ, nameDiscoInfo, endpointDiscoInfo},
		{stanza.GetIQ, nameDiscoItems, endpointDiscoItems},
	},
	gatewayFeatures:  directory.GatewayFeatures,
	endpointFeatures: directory.EndpointFeatures,
	fromMemory:       true,
	kinds:            map[string]string{nameDiscoInfo.Space: "disco_info", nameDiscoItems.Space: "disco_items"},
}, {
	name:             "XEP-0199 ping (package ping)",
	gateway:          []iqRoute{{stanza.GetIQ, ping.Name, gatewayPing}},
	endpoint:         []iqRoute{{stanza.GetIQ, ping.Name, endpointPing}},
	gatewayFeatures:  ping.Features,
	endpointFeatures: ping.Features,
	fromMemory:       true,
	kinds:            map[string]string{ping.NS: "ping"},
}, {
	// Every tool an endpoint offers is a command run as a durable task; at
	// the gateway, "Find agents" and the admins' provisioning commands.
	name:            "XEP-0050 ad-hoc commands (package adhoc, route_adhoc.go)",
	gateway:         []iqRoute{{stanza.SetIQ, adhoc.Name, gatewayCommand}},
	endpoint:        []iqRoute{{stanza.SetIQ, adhoc.Name, endpointCommand}},
	gatewayFeatures: adhoc.GatewayFeatures,
	kinds:           map[string]string{adhoc.NS: "commands"},
}, {
	// Provisioning and self-registration at the gateway, whose #admin and
	// #self-register features depend on the policy; manifest and schema
	// retrieval at endpoints.
	name: "agent API urn:xmpp:agent-api:0 (package api, route_api.go)",
	gateway: []iqRoute{
		{stanza.SetIQ, api.NameRegister, provisioning((*api.Service).Register)},
		{stanza.SetIQ, api.NameActivate, provisioning((*api.Service).Activate)},
		{stanza.SetIQ, api.NameDeactivate, provisioning((*api.Service).Deactivate)},
		{stanza.GetIQ, api.NameRegistrationStatus, apiHandler((*api.Service).RegistrationStatus)},
		{stanza.SetIQ, api.NameRemoveVersion, provisioning((*api.Service).RemoveVersion)},
		{stanza.SetIQ, api.NameRemoveEndpoint, provisioning((*api.Service).RemoveEndpoint)},
	},
	endpoint: []iqRoute{
		{stanza.GetIQ, api.NameManifestRequest, apiHandler((*api.Service).ManifestRequest)},
		{stanza.GetIQ, api.NameSchemaRequest, apiHandler((*api.Service).SchemaRequest)},
	},
	endpointFeatures: api.EndpointFeatures,
	policyFeatures:   api.GatewayFeatures,
	kinds:            map[string]string{api.NS: "agent_api"},
}, {
	// Gets only, at endpoints: the gateway JID has no profile, and
	// profiles come from manifests, never from a set.
	name: "XEP-0054 vcard-temp and XEP-0292 vCard4 (package legacy, route_legacy.go)",
	endpoint: []iqRoute{
		{stanza.GetIQ, legacy.NameVCardTemp, endpointVCardTemp},
		{stanza.GetIQ, legacy.NameVCard4, endpointVCard4},
	},
	endpointFeatures: legacy.VCardFeatures,
	kinds:            map[string]string{legacy.NSVCardTemp: "vcard", legacy.NSVCard4: "vcard4"},
}, {
	// At the gateway JID only: a search at an endpoint is not routed.
	name: "XEP-0055 Jabber Search (package search, route_search.go)",
	gateway: []iqRoute{
		{stanza.GetIQ, search.Name, searchFields},
		{stanza.SetIQ, search.Name, searchSubmit},
	},
	gatewayFeatures: search.Features,
	fromMemory:      true,
	kinds:           map[string]string{search.NS: "search"},
}, {
	// Invocation, recovery, input and cancellation at endpoints; without
	// an attached task service every one is <service-unavailable/>, like
	// an unrouted IQ. The features depend on the endpoint (see above).
	name: "Task Execution urn:xmpp:agent-task:0 (packages task and taskd, route_task.go)",
	endpoint: []iqRoute{
		{stanza.SetIQ, task.NameInvoke, taskInvoke},
		{stanza.GetIQ, task.NameTaskState, taskCall((*taskd.Service).State)},
		{stanza.GetIQ, task.NameTaskResult, taskCall((*taskd.Service).Result)},
		{stanza.SetIQ, task.NameProvideInput, taskCall((*taskd.Service).ProvideInput)},
		{stanza.SetIQ, task.NameCancel, taskCall((*taskd.Service).Cancel)},
	},
	kinds: map[string]string{task.NS: "agent_task"},
}}
