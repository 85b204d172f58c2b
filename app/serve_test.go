package app_test

import (
	"reflect"
	"testing"
	"time"

	"agentgw/app"
	"agentgw/config"
	"agentgw/policy"

	"mellium.im/xmpp/jid"
)

// TestGatewayOptions: every option the gateway reads comes from its key of
// the configuration, and only mcp endpoints with cold_start_supported =
// true are cold-start endpoints.
func TestGatewayOptions(t *testing.T) {
	pol := &policy.Policy{Admins: []string{"admin@home.example"}}
	cfg := &config.Config{
		Component: config.Component{
			Domain:            jid.MustParse("agents.example"),
			Server:            "xmpp.example:5347",
			Secret:            []byte("s3cret"),
			TLS:               true,
			TLSServerName:     "xmpp.example",
			TLSCAFile:         "/etc/agentgw/ca.pem",
			InsecurePlaintext: true,
			PingInterval:      time.Minute,
			PingTimeout:       2 * time.Second,
			ReconnectMax:      3 * time.Minute,
		},
		Log: config.Log{DebugXML: true},
		Gateway: config.Gateway{
			Name:                 "Agents",
			PageMax:              25,
			RequestReplaySeconds: 120,
			RateLimit:            4.5,
			RateBurst:            9,
			DomainRateLimit:      40,
			DomainRateBurst:      80,
		},

		Quotas: config.Quotas{VersionsPerRegistrant: 7, SubscriptionsPerEndpoint: 11, SubscriptionsTotal: 13,
			FinishedTasksPerCaller: 17, StoredBytesPerCaller: 19},
		Policy: pol,
		Endpoints: []config.Endpoint{
			{JID: "demo@agents.example", Runtime: config.RuntimeBuiltin},
			{JID: "cold@agents.example", Runtime: config.RuntimeMCP, MCP: &config.MCPEndpoint{ColdStart: true}},
			{JID: "warm@agents.example", Runtime: config.RuntimeMCP, MCP: &config.MCPEndpoint{KeepWarm: true}},
		},
	}
	got := reflect.ValueOf(app.GatewayOptions(cfg))
	// Each option but ColdStart is the configuration's field of the same
	// name, in Config or in its Quotas; every one is set, so that an
	// option added to gateway.Options and not to GatewayOptions fails.
	// The embedded tables (Stream, Service, Quotas) are checked field by
	// field.
	var opts []reflect.StructField
	for i := range got.NumField() {
		f := got.Type().Field(i)
		if !f.Anonymous {
			opts = append(opts, f)
			continue
		}
		for k := range f.Type.NumField() {
			sub := f.Type.Field(k)
			sub.Index = []int{i, k}
			opts = append(opts, sub)
		}
	}
	for _, f := range opts {
		name, opt := f.Name, got.FieldByIndex(f.Index)
		if opt.IsZero() {
			t.Errorf("GatewayOptions leaves %s unset", name)
		}
		if name == "ColdStart" {
			continue
		}
		src := reflect.ValueOf(*cfg).FieldByName(name)
		if !src.IsValid() {
			src = reflect.ValueOf(cfg.Quotas).FieldByName(name)
		}
		if !src.IsValid() || !reflect.DeepEqual(opt.Interface(), src.Interface()) {
			t.Errorf("GatewayOptions %s = %v, want the configuration's %v", name, opt, src)
		}
	}
	want := map[string]bool{"cold@agents.example": true}
	if cold := app.GatewayOptions(cfg).ColdStart; !reflect.DeepEqual(cold, want) {
		t.Errorf("ColdStart = %v, want %v", cold, want)
	}
}

// TestTaskOptions: the task service reads the [tasks] and [quotas] tables
// whole, each field from the key of its name, and the replay window from
// gateway.request_replay_seconds.
func TestTaskOptions(t *testing.T) {
	cfg := &config.Config{
		Gateway: config.Gateway{RequestReplaySeconds: 77},
		Tasks: config.TaskLimits{Retention: 3 * time.Hour, DefaultTimeout: 5 * time.Minute, MaxTimeout: 7 * time.Hour,
			MaxActive: 11, PurgeInterval: 13 * time.Second},
		Quotas: config.Quotas{FinishedTasksPerCaller: 17, StoredBytesPerCaller: 19, VersionsPerRegistrant: 23,
			SubscriptionsPerEndpoint: 29, SubscriptionsTotal: 31},
	}
	opts := app.TaskOptions(cfg)
	for _, table := range []struct{ got, want reflect.Value }{
		{reflect.ValueOf(opts.Limits), reflect.ValueOf(cfg.Tasks)},
		{reflect.ValueOf(opts.Quotas), reflect.ValueOf(cfg.Quotas)},
	} {
		for i := range table.got.NumField() {
			name := table.got.Type().Field(i).Name
			got, want := table.got.Field(i), table.want.FieldByName(name)
			if got.IsZero() || !want.IsValid() || !reflect.DeepEqual(got.Interface(), want.Interface()) {
				t.Errorf("TaskOptions %s = %v, want the configuration's %v", name, got, want)
			}
		}
	}
	if opts.ReplayWindow != 77*time.Second {
		t.Errorf("ReplayWindow = %v, want 77s", opts.ReplayWindow)
	}
}
