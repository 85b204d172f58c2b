package mcpclient

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	"agentgw/internal/ident"
	"agentgw/internal/secretfile"
	"agentgw/runtime"
	"agentgw/runtime/sandbox"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Defaults of Options.
const (
	// DefaultConnectTimeout bounds starting the upstream and the MCP
	// initialize handshake.
	DefaultConnectTimeout = 30 * time.Second
	// DefaultIdleTimeout is how long a cold-startable upstream that is not
	// kept warm stays up without calls.
	DefaultIdleTimeout = 10 * time.Minute
	// DefaultTerminateGrace is how long a stdio upstream may take to exit
	// after its standard input is closed, before SIGTERM (and as long
	// again before SIGKILL).
	DefaultTerminateGrace = 2 * time.Second
	// DefaultBackoffMin and DefaultBackoffMax bound the delay before a
	// restart; it doubles with each consecutive failure.
	DefaultBackoffMin = 500 * time.Millisecond
	DefaultBackoffMax = 30 * time.Second
	// DefaultRestartWait bounds how long a call that finds the upstream
	// starting, restarting (in backoff) or just lost waits for it to come
	// up before it fails as unavailable; the task's deadline bounds it
	// too.
	DefaultRestartWait = 10 * time.Second
	// DefaultPollInterval is the MCP Tasks polling interval when the
	// server suggests none; server suggestions are clamped to
	// [MinPollInterval, MaxPollInterval].
	DefaultPollInterval = time.Second
	MinPollInterval     = 100 * time.Millisecond
	MaxPollInterval     = 30 * time.Second
	// DefaultTaskTTL is the MCP Tasks ttl requested for a call without a
	// deadline; with one, the time left plus TaskTTLMargin is requested.
	DefaultTaskTTL = time.Hour
	TaskTTLMargin  = time.Minute
	// stableAfter is how long a session must stay up for its end not to
	// count as a failure in the restart backoff.
	stableAfter = 30 * time.Second
	// maxSecretFileBytes bounds a header or environment value file.
	maxSecretFileBytes = 64 << 10
	// basePath is the PATH of a stdio upstream unless Options.Env sets one.
	basePath = "/usr/local/bin:/usr/bin:/bin"
)

// Options configures the mcp runtime of one endpoint. Exactly one of
// Command, URL and Dial selects the upstream MCP server.
//
// Credentials never appear here as literal values: they come from files
// (HeaderFiles, EnvFiles) or from the gateway's environment (EnvPass), are
// read again at every (re)connection, and are redacted from everything the
// runtime reports (status, diagnostics).
type Options struct {
	// Command runs a stdio MCP server: the program and its arguments (the
	// command key). A program name without a slash is looked up in the
	// PATH of the child's environment.
	Command []string
	// Dir is the working directory of a stdio server. Empty means a
	// fresh 0700 directory of its own (the gateway passes one under its
	// state directory), never the shared temporary directory.
	Dir string
	// Env holds extra literal KEY=value entries for a stdio server (the
	// env key), for non-secret settings. The child's environment
	// otherwise holds only PATH and LANG; nothing of the gateway's own
	// environment is passed on except the names in EnvPass.
	Env []string
	// EnvFiles maps an environment variable of a stdio server to a file
	// holding its value (the env_files key), for secrets. One trailing
	// newline is removed.
	EnvFiles map[string]string
	// EnvPass names variables of the gateway's environment passed to a
	// stdio server (the env_pass key).
	EnvPass []string
	// Sandbox, if set, confines a stdio server (package runtime/sandbox);
	// its work directory is Dir.
	Sandbox *sandbox.Child

	// URL is the Streamable HTTP endpoint of an MCP server (the url key),
	// http or https, without userinfo. Redirects are not followed.
	URL string
	// HeaderFiles maps an HTTP header sent on every request to a file
	// holding its value (the header_files key), for example
	// Authorization. One trailing newline is removed.
	HeaderFiles map[string]string
	// HTTPClient is the client for URL; nil means a new one. Its
	// Transport is used; redirects are refused whatever its CheckRedirect.
	HTTPClient *http.Client

	// Dial, if set, replaces Command and URL: it returns a fresh transport
	// for each connection (tests use go-sdk's in-memory transports).
	Dial func(context.Context) (sdk.Transport, error)

	// ColdStart is cold_start_supported: a call that finds the upstream
	// stopped starts it and waits for it. Without ColdStart the upstream
	// is always kept warm, and a call while it is down fails at once with
	// unavailable (retryable).
	ColdStart bool
	// KeepWarm starts the upstream at New and restarts it with backoff
	// whenever it stops (the keep_warm key). It is implied when ColdStart
	// is false.
	KeepWarm bool
	// IdleTimeout stops an upstream that is not kept warm after this long
	// without calls (the idle_timeout key). Zero means
	// DefaultIdleTimeout; negative means never.
	IdleTimeout time.Duration

	// ConnectTimeout, TerminateGrace, BackoffMin, BackoffMax and
	// PollInterval override the defaults above when positive.
	ConnectTimeout, TerminateGrace time.Duration
	BackoffMin, BackoffMax         time.Duration
	PollInterval                   time.Duration
	// RestartWait overrides DefaultRestartWait when positive.
	RestartWait time.Duration

	// AgentName, AgentTitle and AgentDescription fill agent.name,
	// agent.title and agent.description of an imported manifest. Empty
	// AgentName and AgentTitle take the server's serverInfo name and
	// title.
	AgentName, AgentTitle, AgentDescription string
	// DefaultTimeoutSeconds and MaximumTimeoutSeconds, when positive, are
	// declared in the urn:xmpp:agent-api:0 object of every imported tool.
	DefaultTimeoutSeconds, MaximumTimeoutSeconds int

	// OnStatus, if set, is called after every change of the upstream's
	// status, in order, never concurrently. It must not block; the
	// gateway makes presence follow Status.Up.
	OnStatus func(Status)
	// OnToolsChanged, if set, is called when the server announces
	// notifications/tools/list_changed; the gateway may then import again.
	OnToolsChanged func()
	// Tracker, if set, records the process group of each stdio server
	// started, so that what a gateway that died left of it is killed when
	// it starts again.
	Tracker runtime.ProcessTracker
}

// reservedHeaders are set by the transport and may not be configured.
var reservedHeaders = []string{
	"Accept", "Connection", "Content-Length", "Content-Type", "Host",
	"Last-Event-Id", "Mcp-Protocol-Version", "Mcp-Session-Id", "Transfer-Encoding",
}

// check validates opts and fills the defaults. Errors name the option,
// never a value read from a file or the environment.
func (o *Options) check() error {
	n := 0
	if len(o.Command) > 0 {
		n++
	}
	if o.URL != "" {
		n++
	}
	if o.Dial != nil {
		n++
	}
	if n != 1 {
		return errors.New("mcp: exactly one of command and url must be set")
	}
	if len(o.Command) > 0 && o.Command[0] == "" {
		return errors.New("mcp: command: program is empty")
	}
	if o.URL != "" {
		u, err := url.Parse(o.URL)
		switch {
		case err != nil:
			return errors.New("mcp: url: not a valid URL")
		case u.Scheme != "http" && u.Scheme != "https":
			return errors.New("mcp: url: scheme must be http or https")
		case u.User != nil:
			return errors.New("mcp: url: userinfo is not allowed; put credentials in header_files")
		case u.Host == "":
			return errors.New("mcp: url: host is empty")
		}
	}
	if o.URL == "" && len(o.HeaderFiles) > 0 {
		return errors.New("mcp: header_files needs url")
	}
	if len(o.Command) == 0 && (len(o.Env) > 0 || len(o.EnvFiles) > 0 || len(o.EnvPass) > 0) {
		return errors.New("mcp: env, env_files and env_pass need command")
	}
	for i, kv := range o.Env {
		k, _, ok := strings.Cut(kv, "=")
		if !ok || !ident.EnvName(k) {
			return fmt.Errorf("mcp: env[%d]: must be KEY=value", i)
		}
	}
	for k, p := range o.EnvFiles {
		if !ident.EnvName(k) {
			return fmt.Errorf("mcp: env_files: invalid variable name %q", k)
		}
		if _, err := readSecret(p); err != nil {
			return fmt.Errorf("mcp: env_files.%s: %w", k, err)
		}
	}
	for _, k := range o.EnvPass {
		if !ident.EnvName(k) {
			return fmt.Errorf("mcp: env_pass: invalid variable name %q", k)
		}
	}
	for h, p := range o.HeaderFiles {
		if !ident.HeaderName(h) {
			return fmt.Errorf("mcp: header_files: invalid header name %q", h)
		}
		if slices.Contains(reservedHeaders, http.CanonicalHeaderKey(h)) {
			return fmt.Errorf("mcp: header_files: header %s is set by the transport", http.CanonicalHeaderKey(h))
		}
		v, err := readSecret(p)
		if err != nil {
			return fmt.Errorf("mcp: header_files.%s: %w", h, err)
		}
		if !validHeaderValue(v) {
			return fmt.Errorf("mcp: header_files.%s: value is not a valid header value", h)
		}
	}
	if o.DefaultTimeoutSeconds < 0 || o.MaximumTimeoutSeconds < 0 {
		return errors.New("mcp: tool timeouts must not be negative")
	}
	def := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&o.ConnectTimeout, DefaultConnectTimeout)
	def(&o.TerminateGrace, DefaultTerminateGrace)
	def(&o.BackoffMin, DefaultBackoffMin)
	def(&o.RestartWait, DefaultRestartWait)
	def(&o.BackoffMax, DefaultBackoffMax)
	def(&o.PollInterval, DefaultPollInterval)
	if o.IdleTimeout == 0 {
		o.IdleTimeout = DefaultIdleTimeout
	}
	if !o.ColdStart {
		o.KeepWarm = true
	}
	o.Command = slices.Clone(o.Command)
	o.Env = slices.Clone(o.Env)
	o.EnvPass = slices.Clone(o.EnvPass)
	return nil
}

// readSecret reads a value file: at most maxSecretFileBytes, one trailing
// newline removed. Errors never contain the file's content.
// A file that group or others can read or write is refused (internal/secretfile).
func readSecret(path string) (string, error) {
	buf, err := secretfile.Read(path, maxSecretFileBytes)
	if err != nil {
		return "", err
	}
	s := string(buf)
	s = strings.TrimSuffix(s, "\n")
	s = strings.TrimSuffix(s, "\r")
	return s, nil
}

// validHeaderValue reports whether v may be sent as a header value: no
// control characters other than tab.
func validHeaderValue(v string) bool {
	for i := 0; i < len(v); i++ {
		if c := v[i]; c < 0x20 && c != '\t' || c == 0x7f {
			return false
		}
	}
	return true
}

// secrets holds the credential values of one connection, for the child's
// environment or the request headers, and for redaction.
type secrets struct {
	env     []string // KEY=value entries
	headers http.Header
	values  []string // every value, longest first
}

// minSecretLen is the shortest value redacted; shorter ones are too
// common to replace meaningfully.
const minSecretLen = 4

// loadSecrets reads the credential files and environment variables.
func (o *Options) loadSecrets() (*secrets, error) {
	s := &secrets{headers: http.Header{}}
	add := func(v string) {
		if len(v) >= minSecretLen {
			s.values = append(s.values, v)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(o.EnvFiles)) {
		v, err := readSecret(o.EnvFiles[k])
		if err != nil {
			return nil, fmt.Errorf("env_files.%s: %w", k, err)
		}
		s.env = append(s.env, k+"="+v)
		add(v)
	}
	for _, k := range o.EnvPass {
		if v, ok := os.LookupEnv(k); ok {
			s.env = append(s.env, k+"="+v)
			add(v)
		}
	}
	// The literal env values are meant for settings, but an operator may
	// still put a credential there: they are redacted too.
	for _, kv := range o.Env {
		if k, v, _ := strings.Cut(kv, "="); k != "PATH" && k != "LANG" {
			add(v)
		}
	}
	for _, h := range slices.Sorted(maps.Keys(o.HeaderFiles)) {
		v, err := readSecret(o.HeaderFiles[h])
		if err != nil {
			return nil, fmt.Errorf("header_files.%s: %w", h, err)
		}
		if !validHeaderValue(v) {
			return nil, fmt.Errorf("header_files.%s: value is not a valid header value", h)
		}
		s.headers.Set(h, v)
		add(v)
		// "Bearer xyz" must also be redacted as "xyz".
		if _, tok, ok := strings.Cut(v, " "); ok {
			add(strings.TrimSpace(tok))
		}
	}
	slices.SortFunc(s.values, func(a, b string) int { return len(b) - len(a) })
	return s, nil
}

// redact replaces every secret value in text.
func (s *secrets) redact(text string) string {
	if s == nil {
		return text
	}
	for _, v := range s.values {
		text = strings.ReplaceAll(text, v, "[redacted]")
	}
	return text
}
