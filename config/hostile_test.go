package config_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"agentgw/config"
)

// TestDomainRateKeys: [gateway] domain_rate_limit and domain_rate_burst
// default, take 0 to disable, and name themselves in errors.
func TestDomainRateKeys(t *testing.T) {
	c, err := config.Load(write(t, minimal))
	if err != nil {
		t.Fatal(err)
	}
	if c.DomainRateLimit != config.DefaultDomainRateLimit || c.DomainRateBurst != config.DefaultDomainRateBurst {
		t.Errorf("defaults: %v %d", c.DomainRateLimit, c.DomainRateBurst)
	}
	c, err = config.Load(write(t, minimal+"[gateway]\ndomain_rate_limit = 0\ndomain_rate_burst = 5\n"))
	if err != nil || c.DomainRateLimit != 0 || c.DomainRateBurst != 5 {
		t.Errorf("explicit: %v %d %v", c.DomainRateLimit, c.DomainRateBurst, err)
	}
	for body, key := range map[string]string{
		"[gateway]\ndomain_rate_limit = -1\n": "gateway.domain_rate_limit",
		"[gateway]\ndomain_rate_burst = 0\n":  "gateway.domain_rate_burst",
	} {
		if _, err := config.Load(write(t, minimal+body)); err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("%q: %v, want an error naming %s", body, err, key)
		}
	}
}

// TestSecretFilesMustBePrivate: a component secret_file, or an MCP
// env_files or header_files entry, that group or others can read is
// refused, and the error names the key, the file and its mode.
func TestSecretFilesMustBePrivate(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(dir, "component.secret")
	if err := os.WriteFile(secret, []byte("s3cret-value\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Chmod(secret, 0o644)
	body := strings.Replace(minimal, `secret = "s3cret-value"`, `secret_file = "`+secret+`"`, 1)
	_, err := config.Load(write(t, body))
	if err == nil || !strings.Contains(err.Error(), "component.secret_file") || !strings.Contains(err.Error(), secret) || !strings.Contains(err.Error(), "mode 0644") {
		t.Fatalf("world-readable secret_file: %v", err)
	}
	if strings.Contains(err.Error(), "s3cret-value") {
		t.Fatalf("error leaks the secret: %v", err)
	}
	os.Chmod(secret, 0o600)
	if _, err := config.Load(write(t, body)); err != nil {
		t.Fatalf("private secret_file: %v", err)
	}
	// The XMPP server's group may read the component secret, as
	// docs/deploy.md's chgrp prosody and chmod 0640 set it up.
	os.Chmod(secret, 0o640)
	if _, err := config.Load(write(t, body)); err != nil {
		t.Fatalf("secret_file readable by the server's group: %v", err)
	}
	os.Chmod(secret, 0o660)
	if _, err := config.Load(write(t, body)); err == nil || !strings.Contains(err.Error(), "mode 0660") {
		t.Fatalf("group-writable secret_file: %v", err)
	}
	os.Chmod(secret, 0o600)

	token := filepath.Join(dir, "token")
	os.WriteFile(token, []byte("Bearer abc123456\n"), 0o600)
	os.Chmod(token, 0o640)
	for key, ep := range map[string]string{
		"endpoint[0].header_files.Authorization": `url = "https://mcp.example/mcp"
header_files = { Authorization = "` + token + `" }`,
		"endpoint[0].env_files.API_KEY": `command = ["/bin/sh"]
env_files = { API_KEY = "` + token + `" }`,
	} {
		_, err := config.Load(write(t, minimal+"[[endpoint]]\njid = \"m@agents.example\"\nruntime = \"mcp\"\n"+ep+"\n"))
		if err == nil || !strings.Contains(err.Error(), key) || !strings.Contains(err.Error(), token) || !strings.Contains(err.Error(), "mode 0640") {
			t.Errorf("%s readable by group: %v", key, err)
		}
	}
}

// TestPlainHTTPOnlyToLoopback: an mcp url of http:// to a host that is not
// loopback is refused unless insecure = true; https, localhost and
// loopback addresses are accepted.
func TestPlainHTTPOnlyToLoopback(t *testing.T) {
	ep := func(url, extra string) string {
		return minimal + "[[endpoint]]\njid = \"m@agents.example\"\nruntime = \"mcp\"\nurl = \"" + url + "\"\n" + extra
	}
	if _, err := config.Load(write(t, ep("http://mcp.example/mcp", ""))); err == nil || !strings.Contains(err.Error(), "endpoint[0].url") || !strings.Contains(err.Error(), "insecure") {
		t.Errorf("plain http to a remote host: %v", err)
	}
	for _, ok := range []string{"https://mcp.example/mcp", "http://127.0.0.1:9/mcp", "http://[::1]:9/mcp", "http://localhost:9/mcp"} {
		if _, err := config.Load(write(t, ep(ok, ""))); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	if _, err := config.Load(write(t, ep("http://mcp.example/mcp", "insecure = true\n"))); err != nil {
		t.Errorf("insecure = true: %v", err)
	}
	if _, err := config.Load(write(t, minimal+"[[endpoint]]\njid = \"e@agents.example\"\nruntime = \"exec\"\ncommand = [\"/bin/sh\"]\ninsecure = true\n")); err == nil || !strings.Contains(err.Error(), "insecure") {
		t.Errorf("insecure on an exec endpoint: %v", err)
	}
}

// TestQuotaKeys: [quotas] defaults, 0 to disable, and errors that name
// the key.
func TestQuotaKeys(t *testing.T) {
	c, err := config.Load(write(t, minimal))
	if err != nil {
		t.Fatal(err)
	}
	want := config.Quotas{
		FinishedTasksPerCaller:   config.DefaultFinishedTasksPerCaller,
		StoredBytesPerCaller:     config.DefaultStoredBytesPerCaller,
		VersionsPerRegistrant:    config.DefaultVersionsPerRegistrant,
		SubscriptionsPerEndpoint: config.DefaultSubscriptionsPerEndpoint,
		SubscriptionsTotal:       config.DefaultSubscriptionsTotal,
	}
	if c.Quotas != want {
		t.Errorf("defaults %+v", c.Quotas)
	}
	c, err = config.Load(write(t, minimal+"[quotas]\nfinished_tasks_per_caller = 0\nsubscriptions_total = 7\n"))
	if err != nil || c.Quotas.FinishedTasksPerCaller != 0 || c.Quotas.SubscriptionsTotal != 7 {
		t.Errorf("explicit %+v %v", c.Quotas, err)
	}
	if _, err := config.Load(write(t, minimal+"[quotas]\nversions_per_registrant = -1\n")); err == nil || !strings.Contains(err.Error(), "quotas.versions_per_registrant") {
		t.Errorf("negative quota: %v", err)
	}
}

// TestMCPTLSKeyMustBePrivate: the MCP face's TLS private key is a secret
// file; its certificate is public and may be world-readable.
func TestMCPTLSKeyMustBePrivate(t *testing.T) {
	p := mcpDir(t, strings.Replace(mcpOnly, "queue_max = 10", "queue_max = 10\ntls_cert = \"mcp.crt\"\ntls_key = \"mcp.key\"", 1))
	dir := filepath.Dir(p)
	os.WriteFile(filepath.Join(dir, "mcp.crt"), []byte("cert"), 0o644)
	os.WriteFile(filepath.Join(dir, "mcp.key"), []byte("key"), 0o600)
	os.Chmod(filepath.Join(dir, "mcp.crt"), 0o644)
	if _, err := config.LoadMCP(p); err != nil {
		t.Fatalf("public certificate, private key: %v", err)
	}
	os.Chmod(filepath.Join(dir, "mcp.key"), 0o644)
	if _, err := config.LoadMCP(p); err == nil || !strings.Contains(err.Error(), "mcp.tls_key") || !strings.Contains(err.Error(), "mode 0644") {
		t.Fatalf("world-readable key: %v", err)
	}
}
