package taskd_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"agentgw/app"
	"agentgw/db"
	"agentgw/internal/pgtest"
	"agentgw/policy"
	"agentgw/runtime"
	"agentgw/runtime/builtin"
	"agentgw/surface"
	"agentgw/task"
	"agentgw/taskd"
	"agentgw/wire"

	"mellium.im/xmpp/jid"
)

// rawCommitter measures the durable commit rate of the disk as the notes
// define it: one connection, WAL, synchronous=FULL, one small row per
// commit. The machines are noisy, so BenchmarkAdmission samples it in short
// windows interleaved with its own rounds and compares the sums.
type rawCommitter struct {
	conn *sql.DB
	ins  *sql.Stmt
	row  []byte
	n    int
	d    time.Duration
}

func newRawCommitter(tb testing.TB, dir string) *rawCommitter {
	tb.Helper()
	conn, err := sql.Open("sqlite", filepath.Join(dir, "raw.db")+"?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { conn.Close() })
	conn.SetMaxOpenConns(1)
	if _, err := conn.Exec(`CREATE TABLE row (id INTEGER PRIMARY KEY, v BLOB NOT NULL)`); err != nil {
		tb.Fatal(err)
	}
	ins, err := conn.Prepare(`INSERT INTO row (v) VALUES (?)`)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { ins.Close() })
	return &rawCommitter{conn: conn, ins: ins, row: make([]byte, 64)}
}

// sample commits rows one per transaction for about d.
func (r *rawCommitter) sample(tb testing.TB, d time.Duration) {
	start := time.Now()
	for time.Since(start) < d {
		// Autocommit: one transaction, one fsync, per row.
		if _, err := r.ins.Exec(r.row); err != nil {
			tb.Fatal(err)
		}
		r.n++
	}
	r.d += time.Since(start)
}

func (r *rawCommitter) rate() float64 { return float64(r.n) / r.d.Seconds() }

// nopRuntime starts executions that do nothing until their context ends:
// admission and the running transition without a tool's own commits.
type nopRuntime struct{}

type nopExec struct{ done <-chan struct{} }

func (nopRuntime) Start(ctx context.Context, _ runtime.Call, _ runtime.Reporter) (runtime.Execution, error) {
	return nopExec{ctx.Done()}, nil
}
func (nopRuntime) CanResume() bool { return false }
func (nopRuntime) Resume(context.Context, runtime.Call, runtime.Reporter) (runtime.Execution, error) {
	return nil, runtime.ErrNotResumable
}
func (nopExec) Input(json.RawMessage) error      { return runtime.ErrNotWaiting }
func (nopExec) Cancel()                          {}
func (e nopExec) Done() <-chan struct{}          { return e.done }
func (nopExec) Diagnostics() runtime.Diagnostics { return runtime.Diagnostics{ExitCode: -1} }

// BenchmarkAdmission measures durable admissions per second (Invoke
// returning, that is the task and its replay record committed with fsync)
// at 1, 8 and 32 concurrent callers, against the raw fsync-commit rate of
// the same disk, sampled in windows interleaved with the admission rounds
// ("x-raw" is their ratio).
//
//   - admit: admission only (nothing dispatched);
//   - echo: each admitted task is also dispatched and runs the builtin
//     echo tool, so the running and completed transitions share the group
//     commits with the admissions.
//
// go test ./taskd -run XXX -bench Admission -benchtime 3s -count 3
func BenchmarkAdmission(b *testing.B) {
	for _, mode := range []string{"admit", "echo"} {
		for _, callers := range []int{1, 8, 32} {
			b.Run(fmt.Sprintf("%s/callers=%d", mode, callers), func(b *testing.B) {
				benchAdmission(b, mode, callers)
			})
		}
	}
}

// rounds is how many admission rounds, each after a raw sample, a
// benchmark run is cut into.
const rounds = 10

func benchAdmission(b *testing.B, mode string, callers int) {
	ctx := context.Background()
	dir := b.TempDir()
	raw := newRawCommitter(b, dir)

	store, err := db.Open(ctx, pgtest.Location(b, filepath.Join(dir, "agentgw.db")))
	if err != nil {
		b.Fatal(err)
	}
	defer store.Close()
	if err := app.RegisterBuiltin(ctx, store, demo); err != nil {
		b.Fatal(err)
	}
	man, err := builtin.Manifest(demo)
	if err != nil {
		b.Fatal(err)
	}
	var rt runtime.Runtime = nopRuntime{}
	if mode == "echo" {
		rt = builtin.New(builtin.Options{})
	}
	svc, err := taskd.New(store, taskd.Options{
		Runtimes: map[string]runtime.Runtime{demo: rt},
		Limits:   taskd.Limits{MaxActive: 1 << 30},
	})
	if err != nil {
		b.Fatal(err)
	}
	defer svc.Close()
	if err := svc.Start(ctx); err != nil {
		b.Fatal(err)
	}
	p, _ := policy.ParsePrincipal("example.org")
	pol := &policy.Policy{Invoke: []policy.Grant{{Principals: []policy.Principal{p}, AllEndpoints: true, AllTools: true}}}
	inv := task.Invoke{RequestID: "req-bench-template-00000000", Tool: "echo", APIVersion: man.Version, ManifestHash: man.Hash, Arguments: `{"text":"hello"}`}
	s, err := wire.Marshal(inv.TokenReader())
	if err != nil {
		b.Fatal(err)
	}
	template, err := wire.Parse(s)
	if err != nil {
		b.Fatal(err)
	}
	to := jid.MustParse(demo)
	invoke := func(from jid.JID, i int64) error {
		el := template
		el.Start.Attr = []xml.Attr{
			wire.Attr("request-id", fmt.Sprintf("req-bench-%020d", i)),
			wire.Attr("tool", "echo"),
			wire.Attr("api-version", man.Version),
		}
		adm, err := svc.Invoke(ctx, surface.Request{Policy: pol, From: from, To: to, Payload: el})
		if err != nil {
			return err
		}
		if mode == "echo" {
			adm.Dispatch()
		}
		return nil
	}

	b0, c0 := svc.CommitStats()
	var (
		next    atomic.Int64
		elapsed time.Duration
		// took holds each admission's time, for its p50 and p99.
		tookMu sync.Mutex
		took   = make([]time.Duration, 0, b.N)
	)
	b.ResetTimer()
	for r := 1; r <= rounds; r++ {
		b.StopTimer()
		raw.sample(b, 100*time.Millisecond)
		b.StartTimer()
		limit := int64(b.N) * int64(r) / rounds
		var wg sync.WaitGroup
		errs := make(chan error, callers)
		start := time.Now()
		for c := 0; c < callers; c++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				from := jid.MustParse(fmt.Sprintf("caller%d@example.org/bench", c))
				var mine []time.Duration
				defer func() {
					tookMu.Lock()
					took = append(took, mine...)
					tookMu.Unlock()
				}()
				for {
					i := next.Add(1)
					if i > limit {
						next.Add(-1)
						return
					}
					t0 := time.Now()
					if err := invoke(from, i); err != nil {
						errs <- err
						return
					}
					mine = append(mine, time.Since(t0))
				}
			}()
		}
		wg.Wait()
		elapsed += time.Since(start)
		close(errs)
		for err := range errs {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	rate := float64(b.N) / elapsed.Seconds()
	b.ReportMetric(rate, "admissions/s")
	if len(took) > 0 {
		slices.Sort(took)
		b.ReportMetric(float64(took[len(took)/2])/1e6, "p50-ms")
		b.ReportMetric(float64(took[len(took)*99/100])/1e6, "p99-ms")
	}
	b.ReportMetric(raw.rate(), "raw-commits/s")
	b.ReportMetric(rate/raw.rate(), "x-raw")
	if b1, c1 := svc.CommitStats(); b1 > b0 {
		b.ReportMetric(float64(c1-c0)/float64(b1-b0), "closures/commit")
	}
}
