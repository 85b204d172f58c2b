package gateway

import (
	"log/slog"
	"strconv"
	"time"

	"agentgw/policy"

	"mellium.im/xmpp/jid"
)

// Options is what the gateway reads of the configuration: the component
// stream, the directory's answers, the rate limits and quotas it enforces,
// the policy it starts with, and which endpoints a call wakes. The
// composition root (package app) makes Stream, Service and Quotas from
// the validated [component], [gateway] and [quotas] tables by conversion;
// nothing here changes after New except the policy (SetPolicy).
type Options struct {
	Stream
	Service
	Quotas
	// DebugXML traces the stream's XML to the log (log.debug_xml).
	DebugXML bool
	// Policy is the policy in force at start.
	Policy *policy.Policy
	// ColdStart holds the endpoints (normalized bare JIDs) whose stopped
	// runtime a call starts: they advertise cold_start_supported 1. It is
	// read only.
	ColdStart map[string]bool
}

// Stream is the component stream, as the [component] table sets it.
type Stream struct {
	// Domain is the component's JID (component.domain), Server the
	// host:port of the XMPP server, and Secret the XEP-0114 handshake
	// secret, which String and LogValue leave out.
	Domain jid.JID
	Server string
	Secret []byte
	// TLS dials Server over direct TLS, verifying its certificate for
	// TLSServerName (the host of Server if empty) against the system
	// roots plus TLSCAFile (a PEM file, if set). Without TLS the stream is
	// plain TCP, refused unless it lands on loopback or InsecurePlaintext
	// is set.
	TLS               bool
	TLSServerName     string
	TLSCAFile         string
	InsecurePlaintext bool
	// PingInterval is the quiet time before a keepalive ping, PingTimeout
	// its wait for the answer, and ReconnectMax the cap of the reconnect
	// backoff.
	PingInterval time.Duration
	PingTimeout  time.Duration
	ReconnectMax time.Duration
}

// Service is what the gateway advertises and allows, as the [gateway]
// table sets it.
type Service struct {
	// Name is the gateway's disco identity name, PageMax the RSM page cap,
	// and RequestReplaySeconds the advertised request_replay_seconds.
	Name                 string
	PageMax              int
	RequestReplaySeconds int
	// RateLimit and RateBurst are the per-sender budget (stanzas a second
	// and burst), DomainRateLimit and DomainRateBurst the per-domain one
	// (ratelimit.go).
	RateLimit       float64
	RateBurst       int
	DomainRateLimit float64
	DomainRateBurst int
}

// Quotas are the [quotas] table. The gateway enforces
// VersionsPerRegistrant, SubscriptionsPerEndpoint and SubscriptionsTotal
// itself (0 disables one); the task service the other two.
type Quotas struct {
	FinishedTasksPerCaller   int
	StoredBytesPerCaller     int64
	VersionsPerRegistrant    int
	SubscriptionsPerEndpoint int
	SubscriptionsTotal       int
}

// String describes the options for logs without the secret.
func (o Options) String() string { return o.Stream.String() }

// LogValue is String, so that no log/slog handler prints the secret.
func (o Options) LogValue() slog.Value { return o.Stream.LogValue() }

// String describes the stream for logs without the secret.
func (s Stream) String() string {
	return "domain=" + s.Domain.String() + " server=" + s.Server + " tls=" + strconv.FormatBool(s.TLS)
}

// LogValue is String, so that no log/slog handler prints the secret.
func (s Stream) LogValue() slog.Value {
	return slog.StringValue(s.String())
}
