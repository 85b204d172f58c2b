package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"agentgw/internal/harness"
	"agentgw/legacy"
	"agentgw/wire"
)

const (
	vcardTemp = `<vCard xmlns='vcard-temp'/>`
	vcard4    = `<vcard xmlns='urn:ietf:params:xml:ns:vcard-4.0'/>`
	// The profile's URLs are under .invalid, which never resolves: the
	// gateway must copy them, never fetch them.
	profileHome   = "https://homepage.invalid/profile?from=agentgw&x=1"
	profileAvatar = "https://avatars.invalid/profile.png"
)

// profileAgent registers an endpoint with every public profile member.
func profileAgent(t *testing.T) string {
	return registerAgent(t, "profile", fmt.Sprintf(`"title":"Profile Agent","description":"Has a <public> profile & more.","homepage":%q,"avatarUrl":%q`, profileHome, profileAvatar))
}

var (
	wantTemp = legacy.VCardTemp{FN: "Profile Agent", Nickname: "profile", PhotoExtval: profileAvatar, URL: profileHome, Desc: "Has a <public> profile & more."}
	want4    = legacy.VCard4{FN: "Profile Agent", Nickname: "profile", Note: "Has a <public> profile & more.", URL: profileHome, PhotoURI: profileAvatar}
)

// checkVCards fetches both vCards of ep and compares them with the profile.
func checkVCards(t *testing.T, el wire.Element, raw string, el4 wire.Element, raw4 string) {
	t.Helper()
	if attr(el, "type") != "result" || len(el.Children()) != 1 {
		t.Fatalf("vcard-temp: %s", raw)
	}
	if got, err := legacy.ParseVCardTemp(el.Children()[0]); err != nil || got != wantTemp {
		t.Errorf("vcard-temp = %+v, %v\n%s", got, err, raw)
	}
	if attr(el4, "type") != "result" || len(el4.Children()) != 1 {
		t.Fatalf("vCard4: %s", raw4)
	}
	if got, err := legacy.ParseVCard4(el4.Children()[0]); err != nil || got != want4 {
		t.Errorf("vCard4 = %+v, %v\n%s", got, err, raw4)
	}
}

// TestVCard: a local user reads both vCards and sees both features; a
// remote user who is not granted the endpoint gets the nonexistent error;
// once granted (config + SIGHUP), the remote user reads both over s2s.
func TestVCard(t *testing.T) {
	need(t)
	ep := profileAgent(t)
	alice := login(t, "alice", harness.HomeDomain)
	el, raw := iq(t, alice, "get", ep, vcardTemp)
	el4, raw4 := iq(t, alice, "get", ep, vcard4)
	checkVCards(t, el, raw, el4, raw4)
	_, info := iq(t, alice, "get", ep, discoInfo)
	for _, f := range []string{legacy.NSVCardTemp, legacy.NSVCard4} {
		if !strings.Contains(strings.ReplaceAll(info, `"`, "'"), "var='"+f+"'") {
			t.Errorf("endpoint info lacks %s: %s", f, info)
		}
	}

	carol := login(t, "carol", harness.RemoteDomain)
	for _, payload := range []string{vcardTemp, vcard4} {
		_, hidden := iq(t, carol, "get", ep, payload)
		_, missing := iq(t, carol, "get", "nobody-here@"+harness.ComponentDomain, payload)
		if !strings.Contains(hidden, "item-not-found") || stripAddrs(hidden) != stripAddrs(missing) {
			t.Errorf("hidden and nonexistent differ:\n%s\n%s", hidden, missing)
		}
	}

	grant := fmt.Sprintf("\n[[policy.visibility]]\nprincipals = [\"carol@%s\"]\nendpoints = [%q]\n", harness.RemoteDomain, ep)
	if err := writeConfig(grant); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		writeConfig("")
		suite.gateway.signal(syscall.SIGHUP)
		waitFor(t, func() (wire.Element, bool) {
			el, raw := iq(t, carol, "get", ep, vcardTemp)
			return el, strings.Contains(raw, "item-not-found")
		})
	})
	if err := suite.gateway.signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	el = waitFor(t, func() (wire.Element, bool) {
		el, _ := iq(t, carol, "get", ep, vcardTemp)
		return el, attr(el, "type") == "result"
	})
	raw, _ = wire.Marshal(el.Reader())
	el4, raw4 = iq(t, carol, "get", ep, vcard4)
	checkVCards(t, el, raw, el4, raw4)
}

// vcardScript fetches a vcard-temp with slixmpp's XEP-0054 plugin and
// prints the fields as JSON. Loopback only: STARTTLS is skipped and SASL
// PLAIN is allowed in the clear, as the test Prosody allows.
const vcardScript = `
import json, sys
import slixmpp
from slixmpp.exceptions import IqError, IqTimeout

host, port, account, password, target = sys.argv[1:6]

class Fetch(slixmpp.ClientXMPP):
    def __init__(self):
        super().__init__(account, password)
        self.register_plugin('xep_0054')
        self.add_event_handler('session_start', self.start)
        self.add_event_handler('failed_auth', lambda _: self.disconnect())
        self.result = {'error': 'no session'}

    async def start(self, _):
        try:
            iq = await self['xep_0054'].get_vcard(target, cached=False, timeout=15)
            v = iq['vcard_temp']
            nicks = v['NICKNAME']  # a list: vcard-temp allows several
            self.result = {'FN': v['FN'], 'NICKNAME': ','.join(nicks), 'URL': v['URL'],
                           'DESC': v['DESC'], 'EXTVAL': v['PHOTO']['EXTVAL']}
        except IqError as e:
            self.result = {'error': e.iq['error']['condition']}
        except IqTimeout:
            self.result = {'error': 'timeout'}
        self.disconnect()

c = Fetch()
c['feature_mechanisms'].unencrypted_plain = True
c.connect((host, int(port)), force_starttls=False, disable_starttls=True)
c.loop.run_until_complete(c.disconnected)
print(json.dumps(c.result))
`

// TestVCardSlixmpp: an independent client, Python's slixmpp with its
// XEP-0054 plugin, reads the vcard-temp through Prosody, and gets
// item-not-found for a nonexistent endpoint.
func TestVCardSlixmpp(t *testing.T) {
	need(t)
	const python = "/usr/bin/python3" // Debian's python3-slixmpp imports only here
	if err := exec.Command(python, "-c", "import slixmpp").Run(); err != nil {
		t.Skipf("slixmpp is not installed for %s (apt-get install python3-slixmpp): %v", python, err)
	}
	ep := profileAgent(t)
	script := filepath.Join(t.TempDir(), "vcard.py")
	if err := os.WriteFile(script, []byte(vcardScript), 0o600); err != nil {
		t.Fatal(err)
	}
	host, port, _ := strings.Cut(suite.env.ProsodyC2S, ":")
	fetch := func(target string) map[string]string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, python, script, host, port, "alice@"+harness.HomeDomain, password, target)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("slixmpp: %v\n%s", err, stderr.String())
		}
		var res map[string]string
		if err := json.Unmarshal(out, &res); err != nil {
			t.Fatalf("slixmpp output %q: %v\n%s", out, err, stderr.String())
		}
		return res
	}
	got := fetch(ep)
	want := map[string]string{"FN": wantTemp.FN, "NICKNAME": wantTemp.Nickname, "URL": wantTemp.URL, "DESC": wantTemp.Desc, "EXTVAL": wantTemp.PhotoExtval}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("slixmpp read %s = %q, want %q (all: %v)", k, got[k], v, got)
		}
	}
	if got := fetch("nobody-here@" + harness.ComponentDomain); got["error"] != "item-not-found" {
		t.Errorf("slixmpp, nonexistent endpoint: %v", got)
	}
}
