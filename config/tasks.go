package config

import (
	"time"
)

// DefaultMaxActiveTasks bounds the tasks that are not terminal; past it an
// invocation gets <resource-constraint/>.
const DefaultMaxActiveTasks = 10000

// TasksFile is the [tasks] table as written: retention, lifetimes and
// capacity of tasks.
type TasksFile struct {
	Retention      string `toml:"retention"`
	DefaultTimeout string `toml:"default_timeout"`
	MaxTimeout     string `toml:"max_timeout"`
	MaxActive      int    `toml:"max_active"`
	PurgeInterval  string `toml:"purge_interval"`
}

// TaskLimits is the validated [tasks] table.
type TaskLimits struct {
	// Retention is how long a task's state and result stay queryable
	// after its deadline.
	Retention time.Duration
	// DefaultTimeout is the lifetime of a task whose caller and tool set
	// none; MaxTimeout caps every lifetime.
	DefaultTimeout, MaxTimeout time.Duration
	// MaxActive bounds the tasks that are not terminal.
	MaxActive int
	// PurgeInterval is how often expired tasks are deleted.
	PurgeInterval time.Duration
}

func tasksDefaults() TasksFile {
	return TasksFile{Retention: "24h", DefaultTimeout: "1h", MaxTimeout: "24h", MaxActive: DefaultMaxActiveTasks, PurgeInterval: "1m"}
}

func (t TasksFile) build(p *problems) TaskLimits {
	out := TaskLimits{
		Retention:      duration(t.Retention, "tasks.retention", p),
		DefaultTimeout: duration(t.DefaultTimeout, "tasks.default_timeout", p),
		MaxTimeout:     duration(t.MaxTimeout, "tasks.max_timeout", p),
		MaxActive:      t.MaxActive,
		PurgeInterval:  duration(t.PurgeInterval, "tasks.purge_interval", p),
	}
	if out.DefaultTimeout > out.MaxTimeout && out.MaxTimeout > 0 {
		p.bad("tasks.default_timeout", "must not exceed tasks.max_timeout")
	}
	if out.MaxActive < 1 {
		p.bad("tasks.max_active", "must be a positive integer")
	}
	return out
}
