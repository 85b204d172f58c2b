package config

// Limits and defaults of the [gateway] table, documented in
// config.example.toml.
const (
	// MaxPage is the protocol page cap for directory listing and search:
	// larger RSM max values are clamped to page_max, which may not exceed it.
	MaxPage = 100
	// DefaultReplaySeconds is the advertised request_replay_seconds.
	DefaultReplaySeconds = 86400
	// DefaultRateLimit and DefaultRateBurst bound the IQ requests of one
	// sender (bare JID): requests per second, and how many at once.
	DefaultRateLimit = 100
	DefaultRateBurst = 200
	// DefaultDomainRateLimit and DefaultDomainRateBurst bound the stanzas
	// of all senders of one domain together (domain_rate_limit,
	// domain_rate_burst), so a thousand localparts are one budget.
	DefaultDomainRateLimit = 500
	DefaultDomainRateBurst = 1000
)

// GatewayFile is the [gateway] table as written: what the gateway
// advertises, and the rates it allows.
type GatewayFile struct {
	Name                 string  `toml:"name"`
	PageMax              int     `toml:"page_max"`
	RequestReplaySeconds int     `toml:"request_replay_seconds"`
	RateLimit            float64 `toml:"rate_limit"`
	RateBurst            int     `toml:"rate_burst"`
	DomainRateLimit      float64 `toml:"domain_rate_limit"`
	DomainRateBurst      int     `toml:"domain_rate_burst"`
}

func gatewayDefaults() GatewayFile {
	return GatewayFile{
		Name:                 "Agent Gateway",
		PageMax:              MaxPage,
		RequestReplaySeconds: DefaultReplaySeconds,
		RateLimit:            DefaultRateLimit,
		RateBurst:            DefaultRateBurst,
		DomainRateLimit:      DefaultDomainRateLimit,
		DomainRateBurst:      DefaultDomainRateBurst,
	}
}

// Gateway is the validated [gateway] table. Its fields are those of
// gateway.Service, which app makes from it by a conversion.
type Gateway struct {
	Name                 string
	PageMax              int
	RequestReplaySeconds int
	RateLimit            float64
	RateBurst            int
	DomainRateLimit      float64
	DomainRateBurst      int
}

func (g GatewayFile) build(p *problems) Gateway {
	if g.Name == "" {
		p.bad("gateway.name", "must not be empty")
	}
	if g.PageMax < 1 || g.PageMax > MaxPage {
		p.bad("gateway.page_max", "must be between 1 and %d", MaxPage)
	}
	if g.RequestReplaySeconds < 1 {
		p.bad("gateway.request_replay_seconds", "must be a positive integer")
	}
	if g.RateLimit < 0 {
		p.bad("gateway.rate_limit", "must be 0 (no limit) or a positive number of requests per second")
	}
	if g.RateBurst < 1 {
		p.bad("gateway.rate_burst", "must be a positive integer")
	}
	if g.DomainRateLimit < 0 {
		p.bad("gateway.domain_rate_limit", "must be 0 (no limit) or a positive number of requests per second")
	}
	if g.DomainRateBurst < 1 {
		p.bad("gateway.domain_rate_burst", "must be a positive integer")
	}
	return Gateway(g)
}
