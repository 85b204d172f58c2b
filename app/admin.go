package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"agentgw/config"
	"agentgw/db"
	"agentgw/mcpsync"

	"mellium.im/xmpp/jid"
)

// ErrUsage marks a usage error (a flag's value): the CLI exits with code 2
// and prints its usage.
var ErrUsage = errors.New("usage")

// Admin is what the store commands (endpoint, backup, init,
// check-blocking) and manifest hash read of a gateway configuration, and
// the store it names once OpenStore has opened it.
type Admin struct {
	// Store is the open store, after OpenStore.
	Store *db.Store
	cfg   *config.Config
}

// LoadAdmin loads the gateway configuration at path.
func LoadAdmin(path string) (*Admin, error) {
	cfg, err := config.Load(path)
	if err != nil {
		return nil, err
	}
	return &Admin{cfg: cfg}, nil
}

// OpenAdmin loads the configuration at path and opens its store, saying on
// note when the store was migrated (and where the copy from before is).
func OpenAdmin(ctx context.Context, path string, note io.Writer) (*Admin, error) {
	a, err := LoadAdmin(path)
	if err != nil {
		return nil, err
	}
	if err := a.OpenStore(ctx, note); err != nil {
		return nil, err
	}
	return a, nil
}

// OpenStore opens the store of database.path or database.url; a
// migration is said on note unless it is nil.
func (a *Admin) OpenStore(ctx context.Context, note io.Writer) error {
	store, err := openStore(ctx, a.cfg.Database)
	if err != nil {
		return err
	}
	if m := store.Migrated(); m.Backup != "" && note != nil {
		fmt.Fprintf(note, "agentgw: migrated %s from schema version %d to %d; the database before it is at %s\n", a.cfg.Database.Redacted(), m.From, m.To, m.Backup)
	}
	a.Store = store
	return nil
}

// Close closes the store, if it is open.
func (a *Admin) Close() error {
	if a.Store == nil {
		return nil
	}
	return a.Store.Close()
}

// Database names the store for messages: database.path, resolved, or
// database.url without its password.
func (a *Admin) Database() string { return a.cfg.Database.Redacted() }

// openStore opens the configured store. A failure names the key it came
// from, with the URL's password left out.
func openStore(ctx context.Context, d config.Database) (*db.Store, error) {
	store, err := db.Open(ctx, d.Store())
	if err != nil && d.DatabaseURL != "" {
		return nil, fmt.Errorf("database.url: %w", err)
	}
	return store, err
}

// Domain is component.domain.
func (a *Admin) Domain() string { return a.cfg.Domain.Domainpart() }

// LocalDomains is policy.local_domains.
func (a *Admin) LocalDomains() []string { return a.cfg.Policy.LocalDomains }

// SyncEndpoint imports the tool list of the mcp endpoint jid into the
// store (SyncEndpoint).
func (a *Admin) SyncEndpoint(ctx context.Context, jid string) (*mcpsync.Result, error) {
	return SyncEndpoint(ctx, a.cfg, a.Store, jid)
}

// ChatConsent checks that endpoint chats and that a [[policy.chat]] grant
// lets account chat with it, and returns chat.consent_days as a duration.
func (a *Admin) ChatConsent(account jid.JID, endpoint string) (time.Duration, error) {
	if _, ok := a.cfg.Chat.Endpoints[endpoint]; !ok {
		return 0, fmt.Errorf("check-blocking: %s does not chat: set chat in its [[endpoint]]", endpoint)
	}
	if !a.cfg.Policy.CanChat(account, endpoint) {
		return 0, fmt.Errorf("check-blocking: no [[policy.chat]] grant lets %s chat with %s", account, endpoint)
	}
	return a.cfg.Chat.Consent, nil
}

// CheckConfig validates the file at path as check-config does and
// describes it (config.Check). A gateway configuration is checked against
// this kernel's Landlock ABI too: with runtime.sandbox = "required" it
// would not start here.
func CheckConfig(path string, abi int) (string, error) {
	desc, err := config.Check(path)
	if err != nil {
		return "", err
	}
	if cfg, err := config.Load(path); err == nil {
		if _, err := PlanSandbox(cfg, abi); err != nil {
			return "", err
		}
		desc += " sandbox=" + cfg.Sandbox
	}
	return desc, nil
}

// SchemaVersions are the store schema versions this binary writes, for
// `agentgw version`: SQLite's and PostgreSQL's.
func SchemaVersions() (sqlite, postgres int) { return db.SchemaVersions() }
