// Package taskd runs durable tasks: it persists every transition of package
// task in SQLite, batching commits, drives runtimes, and recovers after a
// restart.
//
// It is the durable, concurrent form of the driver that package task
// documents: every command is a task.Machine step applied to the committed
// task and written whole in one group commit (db.GroupCommitter), and the
// step's events are sent only after that commit. Nothing holds a lock
// across a commit.
//
// Its goroutines (committer, notifier, timer and purge loops), the order of
// admission, and restart with several gateways: docs/task-package.md,
// "taskd".
package taskd

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"agentgw/db"
	"agentgw/internal/instance"
	"agentgw/manifest"
	"agentgw/runtime"
	"agentgw/task"

	"mellium.im/xmpp/jid"
)

// Tunables.
const (
	// DefaultPurgeInterval is how often expired tasks are deleted.
	DefaultPurgeInterval = time.Minute
	// DefaultMaxActive bounds the tasks that are not terminal.
	DefaultMaxActive = 10000
	// purgeBatch is how many tasks one purge transaction deletes.
	purgeBatch = 256
	// notifyAttempts bounds the sends of one event: each failed send is
	// retried once Ready reports a stream again, and after the last the
	// event is dropped, so a stream that keeps failing cannot hold back
	// every later event for ever. notifyPause spaces the attempts.
	notifyAttempts = 5
	notifyPause    = 100 * time.Millisecond
	// stopWait bounds how long Close waits for executions to stop.
	stopWait = 10 * time.Second
)

// Clock is the service's time source. Commits take their instant from the
// store (db.Store.Now), so a test sets both to the same clock.
type Clock interface {
	// Now returns the current time.
	Now() time.Time
	// After returns a channel that receives once d has elapsed.
	After(d time.Duration) <-chan time.Time
	// Until returns a channel that receives once the clock reaches t. A
	// timer for an instant is armed with Until, not After(t - Now()): a
	// clock that moves between the two calls would shift it.
	Until(t time.Time) <-chan time.Time
}

type realClock struct{ now func() time.Time }

func (c realClock) Now() time.Time                         { return c.now() }
func (c realClock) After(d time.Duration) <-chan time.Time { return time.After(d) }
func (c realClock) Until(t time.Time) <-chan time.Time     { return time.After(t.Sub(c.now())) }

// Availability receives what the service learns about runtimes: an
// endpoint whose runtime failed to start a task is down, and up again when
// it starts one. *legacy.Availability (Gateway.Availability) implements it.
type Availability interface {
	MarkDown(endpoint string)
	MarkUp(endpoint string)
}

// Options configures a Service. Limits and Quotas are the [tasks] and
// [quotas] tables: the composition root (package app) makes them from
// config's TaskLimits and Quotas by conversion, so a key the service reads
// is a field of both, or the build fails.
type Options struct {
	Limits
	Quotas
	// ReplayWindow is the advertised request_replay_seconds ([gateway]):
	// replay records live until max(created+ReplayWindow, retain-until).
	ReplayWindow time.Duration
	// Runtimes maps an endpoint's normalized bare JID to the runtime that
	// executes its tools. An endpoint without one admits no task.
	Runtimes map[string]runtime.Runtime
	// Notify sends one event notification from the endpoint to the
	// invoking route. It is called from one goroutine, in commit order.
	// Without Ready an error (no stream) loses the event, which is
	// allowed. Nil drops every event.
	Notify func(from, to jid.JID, ev task.Event) error
	// Ready, if set, blocks until events can be sent (the gateway's
	// WaitConnected) or ctx ends. The notifier waits for it before each
	// event, so events committed while no stream is up (recovery at start,
	// a reconnect) are held in order, up to noteQueue, and sent once it is
	// up; an event whose send fails is sent again after the next Ready, up
	// to notifyAttempts times.
	Ready func(ctx context.Context) error
	// Availability, if set, hears about runtimes going down and up.
	Availability Availability
	// MaxBatch bounds one group commit (0: db.DefaultMaxBatch).
	MaxBatch int
	// Clock is the time source; nil means the real clock, read through
	// the store's Now.
	Clock Clock
	// Log receives background faults (a commit that failed for a runtime
	// report, a purge that failed). Nil discards them.
	Log *slog.Logger
	// Instance is the holder ID of this service's task leases (lease.go);
	// "" makes a fresh one. Two services must never share one.
	Instance string
	// LeaseRenew, LeaseLapse and SignalPoll are the lease timings
	// (0: DefaultLeaseRenew, DefaultLeaseLapse, DefaultSignalPoll).
	LeaseRenew, LeaseLapse, SignalPoll time.Duration
}

// Limits are the [tasks] table (config.TaskLimits).
type Limits struct {
	// Retention is how long a task's state and result stay queryable
	// after its deadline.
	Retention time.Duration
	// DefaultTimeout is the lifetime of a task whose caller and tool set
	// none; MaxTimeout caps every lifetime (0: package task's defaults).
	DefaultTimeout, MaxTimeout time.Duration
	// MaxActive bounds the tasks that are not terminal (0:
	// DefaultMaxActive).
	MaxActive int
	// PurgeInterval is how often expired tasks are deleted (0:
	// DefaultPurgeInterval).
	PurgeInterval time.Duration
}

// Quotas are the [quotas] table (config.Quotas). The service enforces a
// caller's settled tasks kept and the bytes its tasks keep (quota.go; 0 is
// no quota); the gateway enforces the rest.
type Quotas struct {
	FinishedTasksPerCaller   int
	StoredBytesPerCaller     int64
	VersionsPerRegistrant    int
	SubscriptionsPerEndpoint int
	SubscriptionsTotal       int
}

// Service runs the tasks of the hosted endpoints. It is safe for
// concurrent use.
type Service struct {
	store     *db.Store
	id        string // the instance ID, holder of the leases
	gc        *db.GroupCommitter
	m         *task.Machine
	opts      Options
	clock     Clock
	log       *slog.Logger
	manifests manifestCache

	// ctx is the service's lifetime: every execution runs under it.
	ctx    context.Context
	cancel context.CancelFunc

	mu       sync.Mutex
	live     map[string]*liveTask
	wakes    wakeHeap
	armed    time.Time // the wake-up the timer loop waits for
	reserved int       // admissions between their capacity check and commit
	started  bool
	closed   bool

	// diskFull is set while the database's disk is full (retry.go).
	diskFull atomic.Bool
	// strays are the tasks the last renewal found held here but not live
	// (lease.go, renew); only the lease loop touches it.
	strays map[string]bool

	kick  chan struct{}
	notes *notes
	// dropped counts the events dropped since the queue last drained
	// to half (publish, notifier).
	dropped atomic.Int64
	loops   sync.WaitGroup
	sent    chan struct{} // closed when the notifier has finished
}

// liveTask is the in-memory side of a task that is not terminal: its
// execution and its place in the timer heap. Guarded by Service.mu.
type liveTask struct {
	id, target, version, tool string
	wake                      time.Time
	index                     int // in Service.wakes; -1 while ticking
	// deadline bounds the retries of its transitions (retry.go).
	deadline time.Time

	dispatched bool // Dispatch or recovery has claimed it
	exe        runtime.Execution
	stop       context.CancelFunc
	// cancelled and answers hold what arrived for the execution before
	// the runtime had returned it.
	cancelled bool
	answers   [][]byte
}

// note is one queued event notification.
type note struct {
	from, to jid.JID
	ev       task.Event
}

// New returns a Service over store. Call Start to recover and run it, and
// Close before closing the store.
func New(store *db.Store, opts Options) (*Service, error) {
	if opts.MaxActive <= 0 {
		opts.MaxActive = DefaultMaxActive
	}
	if opts.PurgeInterval <= 0 {
		opts.PurgeInterval = DefaultPurgeInterval
	}
	if opts.LeaseRenew <= 0 {
		opts.LeaseRenew = DefaultLeaseRenew
	}
	if opts.LeaseLapse <= 0 {
		opts.LeaseLapse = DefaultLeaseLapse
	}
	if opts.SignalPoll <= 0 {
		opts.SignalPoll = DefaultSignalPoll
	}
	if opts.Instance == "" {
		opts.Instance = instance.New()
	}
	clock := opts.Clock
	if clock == nil {
		clock = realClock{now: func() time.Time { return store.Now() }}
	}
	log := opts.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	gc, err := store.NewGroupCommitter(context.Background(), opts.MaxBatch)
	if err != nil {
		return nil, fmt.Errorf("taskd: %w", err)
	}
	gc.HookPanic = func(v any) {
		// A bug in a commit hook: its task's in-memory state may lag
		// the store until a restart recovers it; every caller still got
		// its own outcome.
		log.Error("taskd: commit hook panicked", "panic", v)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Service{
		store: store,
		id:    opts.Instance,
		gc:    gc,
		m: task.NewMachine(task.Config{Retention: opts.Retention, ReplayWindow: opts.ReplayWindow,
			DefaultTimeout: opts.DefaultTimeout, MaxTimeout: opts.MaxTimeout}),
		opts:      opts,
		clock:     clock,
		log:       log,
		manifests: manifestCache{byKey: map[string]*manifest.Manifest{}},
		ctx:       ctx,
		cancel:    cancel,
		live:      map[string]*liveTask{},
		kick:      make(chan struct{}, 1),
		notes:     newNotes(),
		sent:      make(chan struct{}),
	}
	go s.notifier()
	return s, nil
}

// Machine returns the task rules in force.
func (s *Service) Machine() *task.Machine { return s.m }

// Start claims and recovers the tasks a previous run left unsettled and
// nobody else holds (lease.go), then runs the timers, the purge, the lease
// loop and the signal loop. It returns once every recovered task has been
// resumed, dispatched or settled.
func (s *Service) Start(ctx context.Context) error {
	s.mu.Lock()
	if s.started || s.closed {
		s.mu.Unlock()
		return errors.New("taskd: Start called twice or after Close")
	}
	s.started = true
	s.mu.Unlock()

	// The tasks nobody holds: lapsed leases, a gateway of this machine
	// that is gone, a previous run of this one. Those another live
	// gateway holds stay with it.
	s.log.Debug("taskd: holding tasks as", "instance", s.id)
	claims, err := s.claimAll(ctx, 0)
	if err != nil {
		return fmt.Errorf("taskd: recover: %w", err)
	}
	ids, err := s.adopt(claims)
	if err != nil {
		return fmt.Errorf("taskd: recover: %w", err)
	}
	s.loops.Add(4)
	go s.timerLoop()
	go s.purgeLoop()
	go s.leaseLoop()
	go s.signalLoop()

	var wg sync.WaitGroup
	for _, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.recover(id)
		}()
	}
	wg.Wait()
	return nil
}

// Close stops the service: every execution is told to stop (its task
// stays as committed, to be settled by the next Start), queued commits
// finish, and the loops end. It waits a bounded time for tools to stop.
func (s *Service) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	var running []runtime.Execution
	for _, lt := range s.live {
		if lt.exe != nil {
			running = append(running, lt.exe)
		}
	}
	s.mu.Unlock()

	s.cancel()
	deadline := time.After(stopWait)
wait:
	for _, exe := range running {
		select {
		case <-exe.Done():
		case <-deadline:
			s.log.Warn("taskd: closing with tools still running")
			break wait
		}
	}
	s.loops.Wait()
	err := s.gc.Close()
	if s.started {
		// What this gateway held is for the next one to claim now.
		s.release()
	}
	// The committer has stopped, so no hook queues an event any more.
	s.notes.close()
	<-s.sent
	return err
}

// notifier sends queued events in commit order until Close.
func (s *Service) notifier() {
	defer close(s.sent)
	for {
		n, ok := s.notes.pop()
		if !ok {
			return
		}
		if s.opts.Notify != nil {
			s.notify(n)
		}
		// Once the queue has drained to half, say how many were dropped
		// and warn again at the next drop.
		if s.dropped.Load() > 0 && s.notes.len() < noteQueue/2 {
			s.log.Warn("event queue has room again", "dropped", s.dropped.Swap(0))
		}
	}
}

// notify sends one event, waiting for Ready first and retrying a failed
// send after the next Ready. Once the service is closing it tries once and
// gives up: Close must not wait for a stream.
func (s *Service) notify(n note) {
	for attempt := 1; ; attempt++ {
		closing := false
		if s.opts.Ready != nil {
			closing = s.opts.Ready(s.ctx) != nil
		}
		err := s.opts.Notify(n.from, n.to, n.ev)
		if err == nil {
			return
		}
		if s.opts.Ready == nil || closing || attempt == notifyAttempts {
			// A lost event is allowed: task-state recovers it.
			s.log.Debug("taskd: event not sent", "to", n.to.String(), "revision", n.ev.Revision, "err", err)
			return
		}
		// The failed send is dropping its stream; give the gateway a
		// moment to say so before asking Ready again.
		select {
		case <-s.ctx.Done():
		case <-time.After(notifyPause):
		}
	}
}

// addLiveLocked tracks a task that is not terminal; s.mu is held.
func (s *Service) addLiveLocked(t *task.Task) *liveTask {
	lt := &liveTask{id: t.ID, target: t.Target.String(), version: t.APIVersion, tool: t.Tool, index: -1, deadline: t.Deadline}
	s.live[t.ID] = lt
	s.setWakeLocked(lt, t.NextWake())
	return lt
}

// follow makes the in-memory side of a task follow a committed step:
// a settled task is forgotten and its execution ended; any other gets its
// new wake-up.
func (s *Service) follow(t *task.Task) {
	s.mu.Lock()
	defer s.mu.Unlock()
	lt := s.live[t.ID]
	if lt == nil {
		return
	}
	if t.State.Terminal() {
		delete(s.live, t.ID)
		s.removeWakeLocked(lt)
		if lt.stop != nil {
			// The runtime stops the tool; nothing it reports later can
			// change the task (runtime.ErrSettled).
			lt.stop()
		}
		return
	}
	s.setWakeLocked(lt, t.NextWake())
}

// CommitStats returns how many group commits the service has run and how
// many closures (admissions, transitions, purges) they held.
func (s *Service) CommitStats() (commits, closures int64) { return s.gc.Stats() }

// Active returns the number of tasks that are not terminal.
func (s *Service) Active() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.live)
}

// reserve claims room for one new task: <resource-constraint/> at
// capacity, <service-unavailable/> once closing.
func (s *Service) reserve() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.closed:
		return task.ErrServiceUnavailable
	case len(s.live)+s.reserved >= s.opts.MaxActive:
		return task.ErrResourceConstraint
	}
	s.reserved++
	return nil
}

func (s *Service) unreserve() {
	s.mu.Lock()
	s.reserved--
	s.mu.Unlock()
}
