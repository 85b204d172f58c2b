// Package harness starts real XMPP servers on loopback for tests: Prosody
// serving the local domain and an XEP-0114 component domain for the gateway,
// and optionally ejabberd serving a remote domain federated with Prosody over
// s2s, plus a tiny DNS responder and a throwaway CA that make the federation
// work without touching the machine's configuration.
//
// Every server runs from its own configuration and data directory under
// Env.Dir, as a child of the test process in its own process group, on random
// free ports of dedicated 127.0.0.x addresses. Stop (or the t.Cleanup of
// StartT) kills the groups; on Linux the servers also die with the test
// binary if it is killed before cleanups run.
//
// The harness is Unix-only and assumes Debian's prosody (0.12) and ejabberd
// (23.01) packages, and lua-unbound for Prosody's resolver.
package harness

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
)

// Fixed names and addresses of the test network. Ports are random.
const (
	// HomeDomain is Prosody's VirtualHost with the local users.
	HomeDomain = "home.example"
	// ComponentDomain is Prosody's XEP-0114 component: the gateway's domain.
	ComponentDomain = "agents.example"
	// FloorDomain is a second XEP-0114 component of Prosody, with the same
	// secret, for a zero-work responder that measures the route's floor.
	FloorDomain = "floor.example"
	// RemoteDomain is ejabberd's host with the remote (federated) users.
	RemoteDomain = "remote.example"
	// RemoteComponentDomain is ejabberd's XEP-0114 component, for a gateway
	// hosted by ejabberd rather than Prosody. Only ejabberd's own users
	// reach it (no DNS record, no certificate for it).
	RemoteComponentDomain = "agents.remote.example"

	// ProsodyIP is the loopback address Prosody listens on.
	ProsodyIP = "127.0.0.11"
	// EjabberdIP is the loopback address ejabberd listens on.
	EjabberdIP = "127.0.0.12"
	// DNSIP is the loopback address of the DNS responder (UDP).
	DNSIP = "127.0.0.13"
)

// Options configures Start.
type Options struct {
	// Ejabberd also starts ejabberd for RemoteDomain, federated with Prosody.
	Ejabberd bool
	// Dir holds configuration, data and logs. If empty, a new temporary
	// directory is created and removed by Stop (unless KeepDir is set). A
	// given Dir is never removed.
	Dir string
	// KeepDir keeps a temporary Dir after Stop, e.g. to read the logs.
	KeepDir bool
	// Debug makes both servers log at debug level (Prosody then logs every
	// stanza, which costs noticeable CPU in load tests). Default: info.
	Debug bool
	// ProsodyNoNagle sets network_settings = { nagle = false } in
	// Prosody's configuration, as docs/deploy.md recommends. Default:
	// Prosody's own default, Nagle on. SetProsodyNagle changes it later.
	ProsodyNoNagle bool
}

// Env is a running test environment. Its exported fields are fixed for its
// lifetime, also across RestartProsody. Its methods are safe for concurrent
// use.
type Env struct {
	// Dir holds config, data and logs: prosody/, ejabberd/, certs/.
	Dir string `json:"dir"`

	HomeDomain      string `json:"home_domain"`      // "home.example" (Prosody)
	ComponentDomain string `json:"component_domain"` // "agents.example" (component on Prosody)
	RemoteDomain    string `json:"remote_domain"`    // "remote.example" (ejabberd), even if not started

	// ComponentAddr is host:port of Prosody's XEP-0114 component listener.
	ComponentAddr string `json:"component_addr"`
	// ComponentSecret is the shared secret for ComponentDomain.
	ComponentSecret string `json:"component_secret"`

	ProsodyC2S   string `json:"prosody_c2s"`             // host:port, plaintext or STARTTLS
	ProsodyS2S   string `json:"prosody_s2s"`             // host:port
	EjabberdC2S  string `json:"ejabberd_c2s,omitempty"`  // host:port; empty without ejabberd
	EjabberdS2S  string `json:"ejabberd_s2s,omitempty"`  // host:port; empty without ejabberd
	EjabberdHTTP string `json:"ejabberd_http,omitempty"` // host:port of mod_http_api (/api/...)
	// EjabberdComponentAddr is host:port of ejabberd's XEP-0114 listener
	// for RemoteComponentDomain, whose secret is ComponentSecret too.
	EjabberdComponentAddr string `json:"ejabberd_component_addr,omitempty"`
	DNSAddr               string `json:"dns_addr"` // ip:port (UDP) of the DNS responder

	// CACertFile is the PEM file of the test CA that signed both servers'
	// certificates; trust it to use STARTTLS against the servers.
	CACertFile string `json:"ca_cert_file"`

	mu            sync.Mutex
	logLevel      string // "debug" or "info"
	noNagle       bool   // network_settings = { nagle = false } for Prosody
	removeDir     bool
	stopped       bool
	certDir       string
	prosodyCert   string
	prosodyKey    string
	ejabberdPEM   string
	prosodyPaths  prosodyPaths
	ejabberdPaths ejabberdPaths
	dns           *dnsServer
	prosody       *process
	ejabberd      *process
}

// Start creates the environment and starts the servers. It returns once
// every server listens on all its ports (and ejabberd answers its HTTP API).
// On error, including ctx ending, nothing is left running.
func Start(ctx context.Context, opts Options) (_ *Env, err error) {
	for _, ip := range []string{ProsodyIP, EjabberdIP, DNSIP} {
		if err := checkIP(ip); err != nil {
			return nil, err
		}
	}
	e := &Env{
		Dir:             opts.Dir,
		HomeDomain:      HomeDomain,
		ComponentDomain: ComponentDomain,
		RemoteDomain:    RemoteDomain,
		ComponentSecret: randomHex(16),
		logLevel:        "info",
	}
	if opts.Debug {
		e.logLevel = "debug"
	}
	e.noNagle = opts.ProsodyNoNagle
	if e.Dir == "" {
		if e.Dir, err = os.MkdirTemp("", "agentgw-harness-"); err != nil {
			return nil, fmt.Errorf("temp dir: %w", err)
		}
		e.removeDir = !opts.KeepDir
	} else if err := os.MkdirAll(e.Dir, 0o750); err != nil {
		return nil, fmt.Errorf("dir: %w", err)
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, e.Stop())
		}
	}()
	if e.Dir, err = filepath.Abs(e.Dir); err != nil {
		return nil, fmt.Errorf("dir: %w", err)
	}

	if err := e.pickAddrs(opts.Ejabberd); err != nil {
		return nil, err
	}
	if err := e.writeCerts(opts.Ejabberd); err != nil {
		return nil, err
	}
	if e.dns, err = startDNS(e.DNSAddr); err != nil {
		return nil, err
	}
	e.dns.setHost(e.HomeDomain, ProsodyIP, portOf(e.ProsodyS2S), portOf(e.ProsodyC2S))
	e.dns.setHost(e.ComponentDomain, ProsodyIP, portOf(e.ProsodyS2S), 0)

	e.prosodyPaths = newProsodyPaths(e.Dir)
	if err := e.writeProsodyConfig(); err != nil {
		return nil, err
	}
	if err := e.locked(func() error { return e.startProsodyLocked(ctx) }); err != nil {
		return nil, err
	}
	if opts.Ejabberd {
		e.dns.setHost(e.RemoteDomain, EjabberdIP, portOf(e.EjabberdS2S), portOf(e.EjabberdC2S))
		e.ejabberdPaths = newEjabberdPaths(e.Dir)
		if err := e.writeEjabberdConfig(); err != nil {
			return nil, err
		}
		if err := e.locked(func() error { return e.startEjabberdLocked(ctx) }); err != nil {
			return nil, err
		}
	}
	return e, nil
}

// locked runs f with e.mu held.
func (e *Env) locked(f func() error) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return f()
}

// pickAddrs chooses free random ports for every listener.
func (e *Env) pickAddrs(ejabberd bool) error {
	tcp := func(ip string, dst *string) error {
		p, err := pickPort(ip, false)
		if err != nil {
			return err
		}
		*dst = net.JoinHostPort(ip, strconv.Itoa(p))
		return nil
	}
	dnsPort, err := pickPort(DNSIP, true)
	if err != nil {
		return err
	}
	e.DNSAddr = net.JoinHostPort(DNSIP, strconv.Itoa(dnsPort))
	dsts := []*string{&e.ProsodyC2S, &e.ProsodyS2S, &e.ComponentAddr}
	for _, d := range dsts {
		if err := tcp(ProsodyIP, d); err != nil {
			return err
		}
	}
	if ejabberd {
		for _, d := range []*string{&e.EjabberdC2S, &e.EjabberdS2S, &e.EjabberdHTTP, &e.EjabberdComponentAddr} {
			if err := tcp(EjabberdIP, d); err != nil {
				return err
			}
		}
	}
	return nil
}

// writeCerts creates the test CA and the servers' certificates in certs/.
func (e *Env) writeCerts(ejabberd bool) error {
	e.certDir = filepath.Join(e.Dir, "certs")
	if err := os.MkdirAll(e.certDir, 0o750); err != nil {
		return fmt.Errorf("cert dir: %w", err)
	}
	ca, err := newTestCA()
	if err != nil {
		return err
	}
	e.CACertFile = filepath.Join(e.certDir, "ca.crt")
	if err := writeFile(e.CACertFile, ca.pem(), 0o644); err != nil {
		return err
	}
	// Prosody's certificate must also cover the component domain, or
	// ejabberd cannot authenticate s2s for agents.example.
	cert, key, err := ca.issue(e.HomeDomain, e.ComponentDomain)
	if err != nil {
		return err
	}
	e.prosodyCert = filepath.Join(e.certDir, "prosody.crt")
	e.prosodyKey = filepath.Join(e.certDir, "prosody.key")
	if err := writeFile(e.prosodyCert, cert, 0o644); err != nil {
		return err
	}
	if err := writeFile(e.prosodyKey, key, 0o600); err != nil {
		return err
	}
	if ejabberd {
		cert, key, err := ca.issue(e.RemoteDomain)
		if err != nil {
			return err
		}
		e.ejabberdPEM = filepath.Join(e.certDir, "ejabberd.pem")
		if err := writeFile(e.ejabberdPEM, append(cert, key...), 0o600); err != nil {
			return err
		}
	}
	return nil
}

// Stop stops every server and the DNS responder, makes sure none of their
// processes is left, and removes a temporary Dir. It is idempotent.
func (e *Env) Stop() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.stopped {
		return nil
	}
	e.stopped = true
	var errs []error
	// Stop both servers concurrently: ejabberd takes a few seconds.
	var wg sync.WaitGroup
	var ejErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		ejErr = e.stopEjabberdLocked()
	}()
	errs = append(errs, e.stopProsodyLocked())
	wg.Wait()
	errs = append(errs, ejErr)
	if e.dns != nil {
		errs = append(errs, e.dns.close())
		e.dns = nil
	}
	if e.removeDir {
		if err := os.RemoveAll(e.Dir); err != nil {
			errs = append(errs, fmt.Errorf("remove dir: %w", err))
		}
	}
	return errors.Join(errs...)
}

// Register creates the account localpart@domain with password on the server
// that serves domain: Prosody for HomeDomain, ejabberd for RemoteDomain.
func (e *Env) Register(ctx context.Context, localpart, domain, password string) error {
	e.mu.Lock()
	stopped, ej := e.stopped, e.ejabberd != nil
	e.mu.Unlock()
	switch {
	case stopped:
		return errors.New("register: environment stopped")
	case domain == e.HomeDomain:
		return e.registerProsody(ctx, localpart, domain, password)
	case domain == e.RemoteDomain && ej:
		return e.registerEjabberd(ctx, localpart, domain, password)
	default:
		return fmt.Errorf("register: no server for domain %q", domain)
	}
}

// StopProsody stops Prosody, keeping its configuration and data, so that a
// test can observe the gateway losing its component connection.
func (e *Env) StopProsody() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.stopProsodyLocked()
}

// StartProsody starts Prosody again after StopProsody, with the same
// configuration, data and ports.
func (e *Env) StartProsody(ctx context.Context) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.stopped {
		return errors.New("start prosody: environment stopped")
	}
	return e.startProsodyLocked(ctx)
}

// RestartProsody stops and starts Prosody with the same configuration, data
// and ports. Components and clients are disconnected and must reconnect.
func (e *Env) RestartProsody(ctx context.Context) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.stopped {
		return errors.New("restart prosody: environment stopped")
	}
	if err := e.stopProsodyLocked(); err != nil {
		return err
	}
	return e.startProsodyLocked(ctx)
}

// PIDs returns the process ids of the running servers, keyed "prosody" and
// "ejabberd". Each is also the id of the server's process group.
func (e *Env) PIDs() map[string]int {
	e.mu.Lock()
	defer e.mu.Unlock()
	m := map[string]int{}
	if e.prosody != nil {
		m["prosody"] = e.prosody.pid()
	}
	if e.ejabberd != nil {
		m["ejabberd"] = e.ejabberd.pid()
	}
	return m
}

// LogTail returns the last lines of every server's output and log files.
func (e *Env) LogTail(lines int) string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var s string
	for _, p := range []*process{e.prosody, e.ejabberd} {
		if p != nil {
			s += p.tail(lines)
		}
	}
	if s == "" { // servers already stopped: read the files directly
		for _, f := range []string{e.prosodyPaths.log, e.ejabberdPaths.log} {
			if t := tailFile(f, lines); f != "" && t != "" {
				s += fmt.Sprintf("--- %s (last %d lines) ---\n%s", f, lines, t)
			}
		}
	}
	return s
}

// randomHex returns n random bytes in hex.
func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
