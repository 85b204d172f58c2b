package legacy_test

import (
	"fmt"
	"slices"
	"sync"
	"testing"

	"agentgw/legacy"

	"mellium.im/xmpp/stanza"
)

const (
	available    = stanza.AvailablePresence
	unavailable  = stanza.UnavailablePresence
	subscribe    = stanza.SubscribePresence
	subscribed   = stanza.SubscribedPresence
	unsubscribe  = stanza.UnsubscribePresence
	unsubscribed = stanza.UnsubscribedPresence
	probe        = stanza.ProbePresence
)

func out(typ stanza.PresenceType) legacy.Outbound { return legacy.Outbound{Type: typ} }
func reply(typ stanza.PresenceType) legacy.Outbound {
	return legacy.Outbound{Type: typ, ToSender: true}
}

// Standings that come up in the table.
var (
	nowhere    = legacy.Standing{} // nonexistent, or hidden from the sender
	visible    = legacy.Standing{Visible: true, MaySee: true, Available: true}
	visibleOff = legacy.Standing{Visible: true, MaySee: true} // runtime down
	subscriber = legacy.Standing{Visible: true, MaySee: true, Available: true, Subscribed: true, Announced: true}
	// inactive: deactivated, the subscriber may still see it.
	inactive = legacy.Standing{MaySee: true, Subscribed: true}
	// revoked: the policy no longer lets the subscriber see it.
	revoked = legacy.Standing{Subscribed: true, Announced: true}
)

func TestReact(t *testing.T) {
	for _, tc := range []struct {
		name  string
		typ   stanza.PresenceType
		st    legacy.Standing
		store legacy.StoreOp
		send  []legacy.Outbound
	}{
		{"subscribe visible", subscribe, visible, legacy.StoreSubscribe, []legacy.Outbound{out(subscribed), out(available)}},
		{"subscribe visible, runtime down", subscribe, visibleOff, legacy.StoreSubscribe, []legacy.Outbound{out(subscribed)}},
		{"subscribe again", subscribe, subscriber, legacy.StoreSubscribe, []legacy.Outbound{out(subscribed), out(available)}},
		{"subscribe inactive, already subscribed", subscribe, inactive, legacy.StoreSubscribe, []legacy.Outbound{out(subscribed)}},
		{"subscribe nowhere", subscribe, nowhere, legacy.StoreNothing, []legacy.Outbound{out(unsubscribed)}},
		{"subscribe inactive, not subscribed", subscribe, legacy.Standing{MaySee: true}, legacy.StoreNothing, []legacy.Outbound{out(unsubscribed)}},
		{"subscribe revoked", subscribe, revoked, legacy.StoreUnsubscribe, []legacy.Outbound{out(unsubscribed), out(unavailable)}},

		{"unsubscribe subscriber", unsubscribe, subscriber, legacy.StoreUnsubscribe, []legacy.Outbound{out(unsubscribed), out(unavailable)}},
		{"unsubscribe inactive", unsubscribe, inactive, legacy.StoreUnsubscribe, []legacy.Outbound{out(unsubscribed)}},
		{"unsubscribe visible, not subscribed", unsubscribe, visible, legacy.StoreNothing, []legacy.Outbound{out(unsubscribed)}},
		{"unsubscribe nowhere", unsubscribe, nowhere, legacy.StoreNothing, []legacy.Outbound{out(unsubscribed)}},

		{"probe subscriber", probe, subscriber, legacy.StoreNothing, []legacy.Outbound{reply(available)}},
		{"probe subscriber, runtime down", probe, legacy.Standing{Visible: true, MaySee: true, Subscribed: true}, legacy.StoreNothing, []legacy.Outbound{reply(unavailable)}},
		{"probe inactive", probe, inactive, legacy.StoreNothing, []legacy.Outbound{reply(unavailable)}},
		{"probe visible, not subscribed", probe, visible, legacy.StoreNothing, []legacy.Outbound{out(unsubscribed)}},
		{"probe nowhere", probe, nowhere, legacy.StoreNothing, []legacy.Outbound{out(unsubscribed)}},
		{"probe revoked", probe, revoked, legacy.StoreUnsubscribe, []legacy.Outbound{out(unsubscribed), out(unavailable)}},
	} {
		r := legacy.React(tc.typ, tc.st)
		if r.Store != tc.store || !slices.Equal(r.Send, tc.send) {
			t.Errorf("%s: React = %+v, want store %v send %+v", tc.name, r, tc.store, tc.send)
		}
	}
}

// TestReactIgnores: approvals and cancellations sent to an endpoint,
// directed presence and errors are never answered, whatever the standing.
func TestReactIgnores(t *testing.T) {
	for _, typ := range []stanza.PresenceType{available, unavailable, subscribed, unsubscribed, stanza.ErrorPresence, "bogus"} {
		for _, st := range []legacy.Standing{nowhere, visible, subscriber, revoked} {
			if r := legacy.React(typ, st); r.Store != legacy.StoreNothing || len(r.Send) != 0 {
				t.Errorf("React(%q, %+v) = %+v, want nothing", typ, st, r)
			}
		}
	}
}

// TestReactHiddenIsNonexistent: a sender who may not see the endpoint, and
// has no subscription, gets what a nonexistent endpoint gives, whether the
// endpoint is active or not and whatever its runtime does.
func TestReactHiddenIsNonexistent(t *testing.T) {
	for _, typ := range []stanza.PresenceType{subscribe, unsubscribe, probe} {
		want := legacy.React(typ, nowhere)
		// Visible and Available are only ever true together with MaySee;
		// Available alone models an active hidden endpoint.
		for _, st := range []legacy.Standing{{Available: true}, {}} {
			if r := legacy.React(typ, st); r.Store != want.Store || !slices.Equal(r.Send, want.Send) {
				t.Errorf("%s: hidden %+v reacts %+v, nonexistent %+v", typ, st, r, want)
			}
		}
	}
}

func TestAvailability(t *testing.T) {
	var a legacy.Availability
	const ep = "weather@agents.example"
	if a.Down(ep) {
		t.Fatal("the zero Availability has an endpoint down")
	}
	var mu sync.Mutex
	var calls []string
	a.Notify(func(e string) {
		// The callback may ask, without deadlock.
		state := "up"
		if a.Down(e) {
			state = "down"
		}
		mu.Lock()
		calls = append(calls, e+" "+state)
		mu.Unlock()
	})
	a.MarkUp(ep) // already up: no change, no call
	a.MarkDown(ep)
	a.MarkDown(ep) // no change
	if !a.Down(ep) {
		t.Error("MarkDown did not take")
	}
	a.MarkUp(ep)
	a.Notify(nil)
	a.MarkDown(ep)
	if want := []string{ep + " down", ep + " up"}; !slices.Equal(calls, want) {
		t.Errorf("notifications %q, want %q", calls, want)
	}
}

func ExampleReact() {
	// A user who may see an active endpoint asks to subscribe.
	r := legacy.React(stanza.SubscribePresence, legacy.Standing{Visible: true, MaySee: true, Available: true})
	for _, o := range r.Send {
		typ := string(o.Type)
		if typ == "" {
			typ = "available"
		}
		fmt.Println(typ)
	}
	// The same request to an endpoint the user may not see.
	fmt.Println(legacy.React(stanza.SubscribePresence, legacy.Standing{}).Send[0].Type)
	// Output:
	// subscribed
	// available
	// unsubscribed
}
