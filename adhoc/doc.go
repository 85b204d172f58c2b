// Package adhoc implements XEP-0050 (Ad-Hoc Commands) for agentgw: every
// tool an endpoint offers is also a command, whose XEP-0004 form is
// generated from the tool's pinned JSON Schema (with XEP-0122 datatypes),
// so a stock XMPP client can run any agent's tools without speaking
// urn:xmpp:agent-task:0.
//
// It has three layers: wire types that round-trip (XEP-0050, XEP-0004,
// XEP-0122); the mapping, pure functions (SchemaForm, Arguments,
// ResultForm, TextNote); and Service, which answers disco and <command/>
// over durable tasks (the Tasks interface): a submission is an ordinary
// <invoke/> whose request-id is the command's sessionid. docs/adhoc.md
// documents the mapping and its limits.
package adhoc

import "agentgw/wire"

// Namespaces of the protocols this package speaks.
const (
	// NS is the XEP-0050 namespace, feature and the node of the command
	// list.
	NS = "http://jabber.org/protocol/commands"
)

// Features are advertised by an endpoint that offers commands: XEP-0050
// and the forms its commands use, which validate numbers with XEP-0122.
// GatewayFeatures are the gateway's, whose forms need no validation.
var (
	Features        = []string{NS, wire.NSData, wire.NSValidate}
	GatewayFeatures = []string{NS, wire.NSData}
)

// Identity of a command node (XEP-0050 §2.2, XEP-0030 registry).
const (
	CategoryAutomation = "automation"
	TypeCommandNode    = "command-node"
	TypeCommandList    = "command-list"
)
