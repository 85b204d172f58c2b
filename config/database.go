package config

import (
	"net/url"
	"path/filepath"
)

// DatabaseFile is the [database] table as written: a SQLite file (path,
// the default) or a PostgreSQL server (url), never both.
type DatabaseFile struct {
	Path string `toml:"path"`
	URL  string `toml:"url"`
}

// defaultDatabasePath is database.path when neither key is written.
const defaultDatabasePath = "agentgw.db"

func databaseDefaults() DatabaseFile { return DatabaseFile{} }

// Database is the validated [database] table.
type Database struct {
	// DatabasePath is database.path, resolved against the file's folder;
	// empty when database.url is set.
	DatabasePath string
	// DatabaseURL is database.url, a postgres:// URL; empty with a path.
	// It may hold a password: log Database.Redacted, never this.
	DatabaseURL string
	// StateDir is where the gateway keeps files beside its store (the
	// runtimes' work directories): the database file's folder, or the
	// config file's with a URL.
	StateDir string
}

func (d DatabaseFile) build(dir string, p *problems) Database {
	switch {
	case d.Path != "" && d.URL != "":
		p.bad("database.url", "set database.path or database.url, not both")
		return Database{}
	case d.URL != "":
		if msg := checkDatabaseURL(d.URL); msg != "" {
			p.bad("database.url", "%s", msg)
			return Database{}
		}
		return Database{DatabaseURL: d.URL, StateDir: dir}
	}
	path := d.Path
	if path == "" {
		path = defaultDatabasePath
	}
	path = resolve(dir, path)
	return Database{DatabasePath: path, StateDir: filepath.Dir(path)}
}

// checkDatabaseURL says what is wrong with a database.url, without
// repeating any of it (it may hold a password).
func checkDatabaseURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "not a URL"
	}
	if u.Scheme != "postgres" && u.Scheme != "postgresql" {
		return "want a postgres:// or postgresql:// URL"
	}
	if u.Host == "" && u.Query().Get("host") == "" {
		return "no host"
	}
	return ""
}

// Store is what the store is opened from: the URL, else the path.
func (d Database) Store() string {
	if d.DatabaseURL != "" {
		return d.DatabaseURL
	}
	return d.DatabasePath
}

// Redacted names the store for logs and messages: the path, or the URL
// without its password.
func (d Database) Redacted() string {
	if d.DatabaseURL == "" {
		return d.DatabasePath
	}
	u, err := url.Parse(d.DatabaseURL)
	if err != nil {
		return "postgres://(invalid)"
	}
	// libpq's URLs may carry the password as a parameter too.
	q := u.Query()
	for _, k := range []string{"password", "sslpassword"} {
		if q.Has(k) {
			q.Set(k, "xxxxx")
		}
	}
	u.RawQuery = q.Encode()
	return u.Redacted()
}
