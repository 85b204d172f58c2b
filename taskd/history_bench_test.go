package taskd_test

import (
	"context"
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"agentgw/app"
	"agentgw/config"
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

// historyCaller is the one caller whose retained tasks
// BenchmarkAdmissionHistory seeds.
var historyCaller = jid.MustParse("busy@example.org/bench")

// historyArgs is each task's argument: the text echo returns, so that a
// retained task keeps a few KB of document and events (10,000 of
// them stay within the default 64 MiB).
var historyArgs = `{"text":"` + strings.Repeat("x", 512) + `"}`

// historySeeds holds, per number of retained tasks, a database file in
// which historyCaller has that many completed echo tasks, made once per
// test binary and copied for every service.
var historySeeds = struct {
	sync.Mutex
	dir   string
	files map[int]string
}{files: map[int]string{}}

// BenchmarkAdmissionHistory measures one caller's admission (Invoke
// returning, the task committed with fsync) when it already has 0, 1,000
// and 10,000 completed tasks retained, with the default quotas and with
// none. Each iteration admits one task on each of the six stores in turn,
// starting one further each time, so that the machine's noise falls on
// all of them alike. It reports each p50 and the ratios "x-1k" and "x-10k" (to 0 retained, same quotas) and
// "quota-x" (default quotas to none, at 10,000). The finished-task quota
// is the default raised past what the seeds and b.N admissions hold, so
// that nothing is refused: the cost of checking does not depend on the
// limit.
//
// go test ./taskd -run XXX -bench AdmissionHistory -benchtime 400x -count 3
func BenchmarkAdmissionHistory(b *testing.B) {
	ctx := context.Background()
	retained := []int{0, 1000, 10000}
	type svcAt struct {
		name  string
		svc   *taskd.Service
		lat   []time.Duration
		quota bool
		n     int
	}
	var svcs []*svcAt
	// The stores are made in pairs, with and without quotas: in a run
	// that made the three with quotas first, those were 16-26% slower,
	// and 1-6% faster with the order reversed.
	for _, n := range retained {
		for _, quota := range []bool{true, false} {
			seed := historySeed(b, n)
			dir := b.TempDir()
			path := filepath.Join(dir, "agentgw.db")
			copyFile(b, seed, path)
			store, err := db.Open(ctx, path)
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { store.Close() })
			opts := taskd.Options{
				Runtimes: map[string]runtime.Runtime{demo: nopRuntime{}},
				Limits:   taskd.Limits{MaxActive: 1 << 30},
			}
			name := fmt.Sprintf("none/%d", n)
			if quota {
				opts.FinishedTasksPerCaller = max(config.DefaultFinishedTasksPerCaller, n+b.N+1)
				opts.StoredBytesPerCaller = config.DefaultStoredBytesPerCaller
				name = fmt.Sprintf("default/%d", n)
			}
			svc, err := taskd.New(store, opts)
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { svc.Close() })
			if err := svc.Start(ctx); err != nil {
				b.Fatal(err)
			}
			svcs = append(svcs, &svcAt{name: name, svc: svc, quota: quota, n: n})
		}
	}
	inv := historyInvoker(b)
	b.ResetTimer()
	for i := range b.N {
		// The order turns each iteration: none goes first every time.
		for k := range svcs {
			s := svcs[(i+k)%len(svcs)]
			start := time.Now()
			if _, err := inv(ctx, s.svc, historyCaller, fmt.Sprintf("req-measured-%016d", i)); err != nil {
				b.Fatalf("%s: %v", s.name, err)
			}
			s.lat = append(s.lat, time.Since(start))
		}
	}
	b.StopTimer()
	p50 := map[string]float64{}
	for _, s := range svcs {
		slices.Sort(s.lat)
		p50[s.name] = float64(s.lat[len(s.lat)/2].Microseconds())
		b.ReportMetric(p50[s.name], "µs-p50-"+strings.ReplaceAll(s.name, "/", "-"))
	}
	for _, q := range []string{"default", "none"} {
		b.ReportMetric(p50[q+"/1000"]/p50[q+"/0"], "x-1k-"+q)
		b.ReportMetric(p50[q+"/10000"]/p50[q+"/0"], "x-10k-"+q)
	}
	b.ReportMetric(p50["default/10000"]/p50["none/10000"], "quota-x-10k")
	b.ReportMetric(p50["default/0"]/p50["none/0"], "quota-x-0")
}

// historyInvoker returns a function that admits an echo task of
// historyArgs for a caller with a given request ID.
func historyInvoker(tb testing.TB) func(context.Context, *taskd.Service, jid.JID, string) (taskd.Admission, error) {
	man, err := builtin.Manifest(demo)
	if err != nil {
		tb.Fatal(err)
	}
	p, _ := policy.ParsePrincipal("example.org")
	pol := &policy.Policy{Invoke: []policy.Grant{{Principals: []policy.Principal{p}, AllEndpoints: true, AllTools: true}}}
	inv := task.Invoke{RequestID: "req-template", Tool: "echo", APIVersion: man.Version, ManifestHash: man.Hash, Arguments: historyArgs}
	s, err := wire.Marshal(inv.TokenReader())
	if err != nil {
		tb.Fatal(err)
	}
	template, err := wire.Parse(s)
	if err != nil {
		tb.Fatal(err)
	}
	to := jid.MustParse(demo)
	return func(ctx context.Context, svc *taskd.Service, from jid.JID, requestID string) (taskd.Admission, error) {
		el := template
		el.Start.Attr = []xml.Attr{
			wire.Attr("request-id", requestID),
			wire.Attr("tool", "echo"),
			wire.Attr("api-version", man.Version),
		}
		return svc.Invoke(ctx, surface.Request{Policy: pol, From: from, To: to, Payload: el})
	}
}

// historySeed returns a database file where historyCaller has n completed
// echo tasks of historyArgs, made on first use.
func historySeed(tb testing.TB, n int) string {
	historySeeds.Lock()
	defer historySeeds.Unlock()
	if f, ok := historySeeds.files[n]; ok {
		return f
	}
	if historySeeds.dir == "" {
		dir, err := os.MkdirTemp("", "agentgw-history-")
		if err != nil {
			tb.Fatal(err)
		}
		historySeeds.dir = dir
	}
	ctx := context.Background()
	path := filepath.Join(historySeeds.dir, fmt.Sprintf("seed-%d.db", n))
	store, err := db.Open(ctx, path)
	if err != nil {
		tb.Fatal(err)
	}
	if err := app.RegisterBuiltin(ctx, store, demo); err != nil {
		tb.Fatal(err)
	}
	svc, err := taskd.New(store, taskd.Options{
		Runtimes: map[string]runtime.Runtime{demo: builtin.New(builtin.Options{})},
		Limits:   taskd.Limits{MaxActive: 1 << 30},
	})
	if err != nil {
		tb.Fatal(err)
	}
	if err := svc.Start(ctx); err != nil {
		tb.Fatal(err)
	}
	inv := historyInvoker(tb)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += 8 {
				adm, err := inv(ctx, svc, historyCaller, fmt.Sprintf("req-history-seed-%016d", i))
				if err != nil {
					errs <- err
					return
				}
				adm.Dispatch()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		tb.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Minute); ; {
		states, err := store.TaskStates(ctx)
		if err != nil {
			tb.Fatal(err)
		}
		if states["completed"] == n {
			break
		}
		if time.Now().After(deadline) {
			tb.Fatalf("seed of %d: states %v", n, states)
		}
		time.Sleep(20 * time.Millisecond)
	}
	svc.Close()
	if err := store.Close(); err != nil {
		tb.Fatal(err)
	}
	historySeeds.files[n] = path
	return path
}

// copyFile copies a closed database file, with its WAL if Close left one.
func copyFile(tb testing.TB, from, to string) {
	if _, err := os.Stat(from + "-wal"); err == nil {
		copyOne(tb, from+"-wal", to+"-wal")
	}
	copyOne(tb, from, to)
}

func copyOne(tb testing.TB, from, to string) {
	src, err := os.Open(from)
	if err != nil {
		tb.Fatal(err)
	}
	defer src.Close()
	// Private, as db.Open requires of a database file.
	dst, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		tb.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		tb.Fatal(err)
	}
}

// TestMain runs the tests on SQLite and again on PostgreSQL (newEnv opens
// its store at pgtest.Location), and removes the seeds of
// BenchmarkAdmissionHistory, which outlive one benchmark so that -count
// runs share them.
func TestMain(m *testing.M) {
	code := pgtest.RunBoth(m)
	if historySeeds.dir != "" {
		os.RemoveAll(historySeeds.dir)
	}
	os.Exit(code)
}

// BenchmarkAdmissionRun measures admission as a caller's history grows
// within one run, as a client sees it from outside: each iteration is
// 3,000 admissions of echo tasks by one caller on each of two fresh
// stores, one with the default quotas and one with none, alternating
// admission by admission. Each task runs (the builtin echo) and is
// retained, settled, like the tasks of a real caller. It reports the p50
// of the last 100 admissions against that of admissions 200-300, per
// store ("last/early-default", "last/early-none"), and default against
// none over the last 100 ("quota-x-last").
//
//	go test ./taskd -run XXX -bench AdmissionRun -benchtime 3x
func BenchmarkAdmissionRun(b *testing.B) {
	const n = 3000
	ctx := context.Background()
	inv := historyInvoker(b)
	lat := map[bool][][]time.Duration{} // by quota: per iteration, per admission
	for i := range b.N {
		svcs := map[bool]*taskd.Service{}
		for _, quota := range []bool{true, false} {
			store, err := db.Open(ctx, filepath.Join(b.TempDir(), "agentgw.db"))
			if err != nil {
				b.Fatal(err)
			}
			if err := app.RegisterBuiltin(ctx, store, demo); err != nil {
				b.Fatal(err)
			}
			opts := taskd.Options{
				Runtimes: map[string]runtime.Runtime{demo: builtin.New(builtin.Options{})},
				Limits:   taskd.Limits{MaxActive: 1 << 30},
			}
			if quota {
				opts.FinishedTasksPerCaller = config.DefaultFinishedTasksPerCaller
				opts.StoredBytesPerCaller = config.DefaultStoredBytesPerCaller
			}
			svc, err := taskd.New(store, opts)
			if err != nil {
				b.Fatal(err)
			}
			if err := svc.Start(ctx); err != nil {
				b.Fatal(err)
			}
			svcs[quota] = svc
			b.Cleanup(func() { svc.Close(); store.Close() })
		}
		run := map[bool][]time.Duration{}
		for k := range 2 * n {
			// The order turns every admission.
			quota := (k+i)%2 == 0
			start := time.Now()
			adm, err := inv(ctx, svcs[quota], historyCaller, fmt.Sprintf("req-run-%016d", k/2))
			if err != nil {
				b.Fatal(err)
			}
			run[quota] = append(run[quota], time.Since(start))
			adm.Dispatch()
		}
		for q, l := range run {
			lat[q] = append(lat[q], l)
		}
	}
	b.StopTimer()
	p50 := func(quota bool, from, to int) float64 {
		var all []time.Duration
		for _, l := range lat[quota] {
			all = append(all, l[from:to]...)
		}
		slices.Sort(all)
		return float64(all[len(all)/2])
	}
	for _, q := range []bool{true, false} {
		name := map[bool]string{true: "default", false: "none"}[q]
		b.ReportMetric(p50(q, n-100, n)/p50(q, 200, 300), "last/early-"+name)
	}
	b.ReportMetric(p50(true, n-100, n)/p50(false, n-100, n), "quota-x-last")
	b.ReportMetric(p50(true, n-100, n)/1e3, "µs-p50-last-default")
}
