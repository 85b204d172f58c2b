package task

import (
	"io"
	"time"
)

// Defaults of Config. Each bounds an attacker- or tool-controlled
// dimension ("Business Rules": a gateway MUST bound result size, task
// count, task duration and task-state retention).
const (
	// DefaultRetention is how long state and result stay queryable after
	// the task's deadline.
	DefaultRetention = 24 * time.Hour
	// DefaultReplayWindow is the minimum admission replay window
	// (request_replay_seconds).
	DefaultReplayWindow = 24 * time.Hour
	// DefaultTimeout is the task lifetime when neither the caller nor the
	// tool (defaultTimeoutSeconds) sets one.
	DefaultTimeout = time.Hour
	// DefaultMaxTimeout caps every task's lifetime, whatever the caller's
	// deadline or the tool's maximumTimeoutSeconds.
	DefaultMaxTimeout = 24 * time.Hour
	// DefaultMaxEvents caps the revision a task reaches through progress
	// updates and input requests; settlement is always possible.
	DefaultMaxEvents = 4096
	// DefaultMaxInputRequests caps the input requests of one task,
	// re-issues included.
	DefaultMaxInputRequests = 64
	// DefaultMaxArgumentBytes bounds the raw arguments JSON.
	DefaultMaxArgumentBytes = 256 << 10
	// DefaultMaxInputBytes bounds one raw input answer.
	DefaultMaxInputBytes = 64 << 10
	// DefaultMaxResultBytes bounds the raw result envelope of a tool,
	// which travels in one message stanza.
	DefaultMaxResultBytes = 256 << 10
	// DefaultMaxInputSchemaBytes bounds the schema of an input request.
	DefaultMaxInputSchemaBytes = 64 << 10
	// DefaultMaxReasonBytes bounds the <reason/> of a cancellation.
	DefaultMaxReasonBytes = 4096
)

// Config holds the tunables of a Machine. Zero fields take their defaults.
type Config struct {
	// Retention is added to the task deadline to give retain-until, so
	// that the result of every task stays queryable at least this long
	// after it settles.
	Retention time.Duration
	// ReplayWindow is the advertised request_replay_seconds. Replay
	// records live until max(created+ReplayWindow, retain-until).
	ReplayWindow time.Duration
	// DefaultTimeout is the lifetime of a task when the caller gives no
	// deadline and the tool declares no defaultTimeoutSeconds.
	DefaultTimeout time.Duration
	// MaxTimeout caps every task lifetime.
	MaxTimeout time.Duration
	// MaxEvents caps the revision reachable by progress and input
	// requests.
	MaxEvents int64
	// MaxInputRequests caps input requests per task.
	MaxInputRequests int
	// MaxArgumentBytes, MaxInputBytes and MaxResultBytes bound JSON sizes.
	MaxArgumentBytes, MaxInputBytes, MaxResultBytes int
	// MaxInputSchemaBytes bounds the schema of a runtime's input request.
	MaxInputSchemaBytes int
	// MaxReasonBytes bounds a cancellation reason.
	MaxReasonBytes int
	// Rand is the source of identifiers; nil means crypto/rand. Tests
	// may fix it; production must not.
	Rand io.Reader
}

// withDefaults fills every unset field.
func (c Config) withDefaults() Config {
	dur := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	num := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	dur(&c.Retention, DefaultRetention)
	dur(&c.ReplayWindow, DefaultReplayWindow)
	dur(&c.DefaultTimeout, DefaultTimeout)
	dur(&c.MaxTimeout, DefaultMaxTimeout)
	if c.MaxEvents <= 0 {
		c.MaxEvents = DefaultMaxEvents
	}
	num(&c.MaxInputRequests, DefaultMaxInputRequests)
	num(&c.MaxArgumentBytes, DefaultMaxArgumentBytes)
	num(&c.MaxInputBytes, DefaultMaxInputBytes)
	num(&c.MaxResultBytes, DefaultMaxResultBytes)
	num(&c.MaxInputSchemaBytes, DefaultMaxInputSchemaBytes)
	num(&c.MaxReasonBytes, DefaultMaxReasonBytes)
	if c.DefaultTimeout > c.MaxTimeout {
		c.DefaultTimeout = c.MaxTimeout
	}
	return c
}

// Machine applies the task rules. It holds only configuration (compiled
// schemas come from manifest.CachedValidator, shared by the process), so
// one Machine serves every task and goroutine.
// Every method is a pure function of its arguments and the now it is
// given: it reads no clock, touches no store and sends nothing.
type Machine struct {
	cfg Config
}

// NewMachine returns a Machine with cfg, unset fields taking defaults.
func NewMachine(cfg Config) *Machine {
	return &Machine{cfg: cfg.withDefaults()}
}

// Config returns the configuration in force, defaults filled in.
func (m *Machine) Config() Config { return m.cfg }

// stamp is the resolution of the times this package records (created,
// updated, retain-until, input creation and expiry): milliseconds, the
// resolution at which the store keeps times, so that a replayed
// <accepted/> or a re-read task-state is byte-identical to the original.
// Deadlines are the exception: they are compared at nanosecond resolution
// and must be stored at that resolution.
func stamp(t time.Time) time.Time { return t.UTC().Truncate(time.Millisecond) }
