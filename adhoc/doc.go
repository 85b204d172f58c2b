// Package adhoc implements XEP-0050 (Ad-Hoc Commands) for agentgw: every
// tool an endpoint offers is also a command, whose XEP-0004 (Data Forms)
// form is generated from the tool's pinned JSON Schema, with XEP-0122
// (Data Forms Validation) datatypes and ranges for numbers. A stock XMPP
// client (Gajim, Psi, Conversations, slixmpp, …) can so run any agent's
// tools without speaking urn:xmpp:agent-task:0.
//
// The package has three layers:
//
//   - wire types: Command, Note, Actions (XEP-0050) and Form, Field,
//     Option, Validate (XEP-0004, XEP-0122), each with a TokenReader and a
//     parser, so that every form round-trips;
//   - the mapping, pure functions: SchemaForm turns an input schema into
//     a form, Arguments turns a submitted form back into the JSON
//     arguments and names the first bad field, ResultForm and TextNote
//     present a tool result within the stanza budget;
//   - Service, which answers disco#items and disco#info on the command
//     nodes and the <command/> requests of endpoints, over durable tasks
//     (the Tasks interface, which the gateway implements with package
//     taskd): a submission is an ordinary <invoke/> whose request-id is
//     the command's sessionid.
//
// docs/adhoc.md documents the mapping and its limits.
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
