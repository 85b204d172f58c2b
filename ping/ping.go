// Package ping implements XEP-0199: XMPP Ping, as agentgw answers it at the
// gateway JID and at visible endpoints, and as the gateway sends it to keep
// its component stream honest.
package ping

import (
	"encoding/xml"

	"agentgw/wire"
)

// NS is the XEP-0199 namespace.
const NS = "urn:xmpp:ping"

// Features is what answering pings adds to a disco#info feature list.
var Features = []string{NS}

// Name is the <ping/> element name.
var Name = xml.Name{Space: NS, Local: "ping"}

// Request is the payload of a ping IQ get.
func Request() xml.TokenReader {
	return wire.Elem(Name, nil)
}
