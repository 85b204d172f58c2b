package legacy

// This file implements RFC 6121 presence for virtual endpoints, with the
// gateway in the role of the contact's server: it answers subscription
// requests, cancellations and probes addressed to an endpoint's bare JID,
// and decides what availability each subscriber should be shown.

import (
	"sync"

	"mellium.im/xmpp/stanza"
)

// Standing is what the gateway knows, when a presence stanza arrives, about
// its sender's bare JID and the endpoint it is addressed to. Every field is
// false for an endpoint that does not exist, and only Subscribed and
// Announced can be true for one hidden from the sender, so React answers
// a hidden endpoint exactly as a nonexistent one unless the sender holds a
// subscription to it (and so knew it existed).
type Standing struct {
	// Visible: the endpoint is active and the policy lets the sender see it
	// (directory.Service.Endpoint succeeded).
	Visible bool
	// MaySee: the policy lets the sender see the endpoint, active or not.
	MaySee bool
	// Subscribed: a subscription from the sender's bare JID is stored.
	Subscribed bool
	// Available: the endpoint is active and its runtime is not known to be
	// down (see Availability).
	Available bool
	// Announced: on this stream, the sender's bare JID has been sent
	// available presence for the endpoint and not unavailable since.
	Announced bool
}

// StoreOp is the change to the stored subscriptions a reaction makes. It is
// made before anything is sent; if it fails, nothing is sent.
type StoreOp int

// The store operations.
const (
	// StoreNothing leaves the subscriptions as they are.
	StoreNothing StoreOp = iota
	// StoreSubscribe records the sender's subscription.
	StoreSubscribe
	// StoreUnsubscribe removes it.
	StoreUnsubscribe
)

// Outbound is one presence stanza the gateway sends from the endpoint's
// bare JID.
type Outbound struct {
	Type stanza.PresenceType
	// ToSender addresses it to the sender's JID as given (a probe's full
	// JID, so the answer reaches the resource that asked); otherwise it
	// goes to the sender's bare JID, as subscription state changes do.
	ToSender bool
}

// Reaction is what the gateway does about one inbound presence stanza: a
// store operation, then the stanzas to send, in order.
type Reaction struct {
	Store StoreOp
	Send  []Outbound
}

// React is the presence state machine of a virtual endpoint (RFC 6121):
// subscribe is approved (then available) only when the sender may see the
// active endpoint or already is a subscriber who may, and refused with
// unsubscribed otherwise, hidden and nonexistent alike; unsubscribe is
// always answered unsubscribed; probe gets the current presence only from
// a subscriber who may see it, else unsubscribed (as Prosody answers for
// its own users); subscribed, unsubscribed, directed presence and errors
// are not answered. The choices and their RFC sections: docs/gateway.md,
// "Presence decisions".
//
// A subscription or an available presence implies no permission: the
// gateway never consults them to authorize anything.
func React(typ stanza.PresenceType, st Standing) Reaction {
	switch typ {
	case stanza.SubscribePresence:
		if st.Visible || (st.MaySee && st.Subscribed) {
			r := Reaction{Store: StoreSubscribe, Send: []Outbound{{Type: stanza.SubscribedPresence}}}
			if st.Available {
				r.Send = append(r.Send, Outbound{Type: stanza.AvailablePresence})
			}
			return r
		}
		return refuse(st)
	case stanza.UnsubscribePresence:
		return refuse(st)
	case stanza.ProbePresence:
		if st.MaySee && st.Subscribed {
			if st.Available {
				return Reaction{Send: []Outbound{{Type: stanza.AvailablePresence, ToSender: true}}}
			}
			return Reaction{Send: []Outbound{{Type: stanza.UnavailablePresence, ToSender: true}}}
		}
		return refuse(st)
	}
	return Reaction{}
}

// refuse answers unsubscribed, removes a stored subscription, and takes
// back an available presence that was shown.
func refuse(st Standing) Reaction {
	r := Reaction{Send: []Outbound{{Type: stanza.UnsubscribedPresence}}}
	if st.Subscribed {
		r.Store = StoreUnsubscribe
	}
	if st.Announced {
		r.Send = append(r.Send, Outbound{Type: stanza.UnavailablePresence})
	}
	return r
}

// Availability is the runtime half of an endpoint's presence: the set of
// endpoints whose runtime is known to be down. An active endpoint is
// available unless it is in the set, so an endpoint without a runtime is
// available while it is active. The state is volatile: it is never stored
// and never put in a cacheable disco form (ProtoXEP §"Identity and
// Presence").
//
// A runtime layer reports with MarkDown and MarkUp; the gateway registers
// with Notify and makes presence follow. The zero value is ready to use and
// has every endpoint up. It is safe for concurrent use.
type Availability struct {
	mu     sync.Mutex
	down   map[string]bool
	notify func(endpoint string)
}

// MarkDown records that the endpoint's runtime is down. endpoint is a
// normalized bare JID, as stored.
func (a *Availability) MarkDown(endpoint string) { a.set(endpoint, true) }

// MarkUp records that the endpoint's runtime is up again.
func (a *Availability) MarkUp(endpoint string) { a.set(endpoint, false) }

func (a *Availability) set(endpoint string, down bool) {
	a.mu.Lock()
	if a.down[endpoint] == down {
		a.mu.Unlock()
		return
	}
	if down {
		if a.down == nil {
			a.down = map[string]bool{}
		}
		a.down[endpoint] = true
	} else {
		delete(a.down, endpoint)
	}
	f := a.notify
	a.mu.Unlock()
	// Outside the lock: the callback may ask Down.
	if f != nil {
		f(endpoint)
	}
}

// Down reports whether the endpoint's runtime is known to be down.
func (a *Availability) Down(endpoint string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.down[endpoint]
}

// Notify sets the function called, after the change and outside any lock,
// each time an endpoint goes down or comes back up. It replaces any earlier
// one; nil stops notifications.
func (a *Availability) Notify(f func(endpoint string)) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.notify = f
}
