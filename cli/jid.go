package cli

import (
	"errors"

	"mellium.im/xmpp/jid"
)

// parseBareUnder parses an endpoint bare JID and checks it is under domain.
func parseBareUnder(s, domain string) (string, error) {
	j, err := jid.Parse(s)
	if err != nil {
		return "", errors.New("not a valid JID")
	}
	if j.Localpart() == "" || j.Resourcepart() != "" {
		return "", errors.New("an endpoint is a bare JID with a localpart")
	}
	if j.Domainpart() != domain {
		return "", errors.New("not under component.domain " + domain)
	}
	return j.Bare().String(), nil
}
