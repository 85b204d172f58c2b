package config

// DatabaseFile is the [database] table as written.
type DatabaseFile struct {
	Path string `toml:"path"`
}

func databaseDefaults() DatabaseFile { return DatabaseFile{Path: "agentgw.db"} }

// Database is the validated [database] table.
type Database struct {
	// DatabasePath is database.path, resolved against the file's folder.
	DatabasePath string
}

func (d DatabaseFile) build(dir string, p *problems) Database {
	if d.Path == "" {
		p.bad("database.path", "required")
		return Database{}
	}
	return Database{DatabasePath: resolve(dir, d.Path)}
}
