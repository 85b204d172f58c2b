package wire_test

import (
	"testing"

	"agentgw/wire"
)

// TestParseHash checks the one set of hash rules: sha-256, text only, and
// the padded standard Base64 of 32 bytes, XML white space around it
// ignored.
func TestParseHash(t *testing.T) {
	const b64 = "K2/YdwvIBAlfUIeZHiNCyiYA4m4W2wrEOqXQDoQyXp4="
	want, err := wire.ParseHashBase64(b64)
	if err != nil || want.Base64() != b64 {
		t.Fatalf("ParseHashBase64(%q) = %s, %v", b64, want.Base64(), err)
	}
	el, err := wire.Parse("<hash xmlns='urn:xmpp:hashes:2' algo='sha-256'>\n\t" + b64 + " </hash>")
	if err != nil {
		t.Fatal(err)
	}
	if h, err := wire.ParseHash(el); err != nil || h != want {
		t.Errorf("ParseHash = %s, %v", h.Base64(), err)
	}
	for _, bad := range []string{
		"<hash xmlns='urn:xmpp:hashes:2' algo='sha-1'>" + b64 + "</hash>",
		"<hash xmlns='urn:xmpp:hashes:2'>" + b64 + "</hash>",
		"<hash xmlns='urn:x' algo='sha-256'>" + b64 + "</hash>",
		"<hash xmlns='urn:xmpp:hashes:2' algo='sha-256'>" + b64[:len(b64)-1] + "</hash>",
		"<hash xmlns='urn:xmpp:hashes:2' algo='sha-256'>AAAA</hash>",
		"<hash xmlns='urn:xmpp:hashes:2' algo='sha-256'>not base64!</hash>",
		// Non-zero padding bits: lenient Base64 would accept it.
		"<hash xmlns='urn:xmpp:hashes:2' algo='sha-256'>" + b64[:len(b64)-2] + "5=</hash>",
		"<hash xmlns='urn:xmpp:hashes:2' algo='sha-256'><b/>" + b64 + "</hash>",
	} {
		el, err := wire.Parse(bad)
		if err != nil {
			t.Fatal(err)
		}
		if h, err := wire.ParseHash(el); err == nil {
			t.Errorf("ParseHash(%s) = %s, want an error", bad, h.Base64())
		}
	}
}
