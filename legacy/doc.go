// Package legacy implements the surfaces through which ordinary XMPP clients,
// which know nothing of agents, see a virtual endpoint as a contact: its
// public profile as an XEP-0054 vcard-temp and an XEP-0292 vCard4 (vcard.go),
// and RFC 6121 presence (presence.go), as the ProtoXEP's §"Identity and
// Presence" allows.
//
// Both carry only what is public, and neither implies any permission
// (ProtoXEP §"Security Considerations"). The package holds the wire types
// and the decisions; package gateway does the I/O. The presence state
// machine is a pure function (React), so every edge case is a table test
// here.
package legacy
