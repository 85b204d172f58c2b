// Package wire holds the XMPP wire types that agentgw needs and mellium does
// not provide: a builder for token streams, a buffered stanza, XEP-0059 result
// set requests and responses, XEP-0004 data forms (the one implementation, with XEP-0122 validation and multi-item results) with XEP-0128 placement,
// XEP-0030 info and items results that can carry those forms, XEP-0300 hash
// elements, and a canonical serializer used by golden tests.
//
// Everything here is a value with a TokenReader method, in the style of
// mellium's own stanza types, so handlers compose responses without string
// concatenation and without ever reflecting request payloads.
package wire
