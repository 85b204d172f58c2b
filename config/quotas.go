package config

// Defaults of the [quotas] table (docs/limits.md). Each bounds what one
// principal can make the gateway store; past one the request that would
// store more gets <resource-constraint/> and nothing stored is lost.
const (
	// DefaultFinishedTasksPerCaller bounds the settled tasks one caller
	// (bare JID) has kept until their retention ends.
	DefaultFinishedTasksPerCaller = 10_000
	// DefaultStoredBytesPerCaller bounds the bytes one caller's tasks keep:
	// arguments, inputs, events and results.
	DefaultStoredBytesPerCaller = 64 << 20
	// DefaultVersionsPerRegistrant bounds the manifest versions a
	// self-registrant keeps.
	DefaultVersionsPerRegistrant = 100
	// DefaultSubscriptionsPerEndpoint and DefaultSubscriptionsTotal bound
	// presence subscriptions to one endpoint and in all.
	DefaultSubscriptionsPerEndpoint = 10_000
	DefaultSubscriptionsTotal       = 100_000
)

// Quotas is the [quotas] table. 0 disables a quota.
type Quotas struct {
	FinishedTasksPerCaller   int   `toml:"finished_tasks_per_caller"`
	StoredBytesPerCaller     int64 `toml:"stored_bytes_per_caller"`
	VersionsPerRegistrant    int   `toml:"versions_per_registrant"`
	SubscriptionsPerEndpoint int   `toml:"subscriptions_per_endpoint"`
	SubscriptionsTotal       int   `toml:"subscriptions_total"`
}

// defaultQuotas is the [quotas] table decoding starts from.
func defaultQuotas() Quotas {
	return Quotas{
		FinishedTasksPerCaller:   DefaultFinishedTasksPerCaller,
		StoredBytesPerCaller:     DefaultStoredBytesPerCaller,
		VersionsPerRegistrant:    DefaultVersionsPerRegistrant,
		SubscriptionsPerEndpoint: DefaultSubscriptionsPerEndpoint,
		SubscriptionsTotal:       DefaultSubscriptionsTotal,
	}
}

// build validates the table: every quota is 0 (none) or positive.
func (q Quotas) build(p *problems) Quotas {
	for _, k := range []struct {
		name string
		v    int64
	}{
		{"finished_tasks_per_caller", int64(q.FinishedTasksPerCaller)},
		{"stored_bytes_per_caller", q.StoredBytesPerCaller},
		{"versions_per_registrant", int64(q.VersionsPerRegistrant)},
		{"subscriptions_per_endpoint", int64(q.SubscriptionsPerEndpoint)},
		{"subscriptions_total", int64(q.SubscriptionsTotal)},
	} {
		if k.v < 0 {
			p.bad("quotas."+k.name, "must be 0 (no quota) or a positive integer")
		}
	}
	return q
}
