// Package legacy implements the surfaces through which ordinary XMPP clients,
// which know nothing of agents, see a virtual endpoint as a contact: its
// public profile as an XEP-0054 vcard-temp and an XEP-0292 vCard4 (vcard.go),
// and RFC 6121 presence (presence.go), as the ProtoXEP's §"Identity and
// Presence" allows.
//
// Both surfaces carry only what is public: the manifest's name, title,
// description, homepage and avatar URL, and whether the endpoint can be
// reached now. Neither implies any permission (ProtoXEP §"Security
// Considerations", §"Privacy Considerations"): a vCard is not a grant, and a
// presence subscription or an available presence is not evidence that
// communication is unblocked.
//
// The package holds the wire types and the decisions; package gateway does
// the I/O. The presence state machine is a pure function (React) so every
// edge case is a table test here, and the gateway only carries it out.
package legacy
