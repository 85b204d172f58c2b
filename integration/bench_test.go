package integration

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"agentgw/internal/harness"
)

// BenchmarkDiscoInfo measures, in one run and interleaved, a client's
// disco#info round trip to Prosody itself and to an endpoint behind the
// gateway (client → Prosody → component → Prosody → client). It reports the
// p50 of each and their ratio. A ping to the endpoint, whose answer is an
// empty result, shows what the same route costs for the smallest answer:
// the rest of the endpoint's disco#info is the size of its answer.
func BenchmarkDiscoInfo(b *testing.B) {
	need(b)
	alice := login(b, "alice", harness.HomeDomain)
	ctx := context.Background()
	endpoint := "weather@" + harness.ComponentDomain
	var server, gateway, ping []time.Duration
	for b.Loop() {
		tp := time.Now()
		if _, err := alice.IQ(ctx, "get", endpoint, `<ping xmlns='urn:xmpp:ping'/>`); err != nil {
			b.Fatal(err)
		}
		ping = append(ping, time.Since(tp))
		t0 := time.Now()
		if _, err := alice.IQ(ctx, "get", harness.HomeDomain, discoInfo); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		raw, err := alice.IQ(ctx, "get", endpoint, discoInfo)
		if err != nil || !strings.Contains(raw, "agent-endpoint-info") {
			b.Fatalf("%v %s", err, raw)
		}
		t2 := time.Now()
		server = append(server, t1.Sub(t0))
		gateway = append(gateway, t2.Sub(t1))
	}
	ps, pg := p50(server), p50(gateway)
	b.ReportMetric(float64(ps.Microseconds()), "server-p50-µs")
	b.ReportMetric(float64(pg.Microseconds()), "endpoint-p50-µs")
	b.ReportMetric(float64(pg)/float64(ps), "endpoint/server")
	b.ReportMetric(float64(p50(ping).Microseconds()), "endpoint-ping-p50-µs")
	b.ReportMetric(float64(p50(ping))/float64(ps), "ping/server")
}

func p50(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

// BenchmarkFootprint reports the static binary's size and the resident set
// of the gateway process, connected and idle with numAgents+1 endpoints:
// first as started, then again idle after the benchmark's iterations, each
// a directory page, a search and an endpoint's disco#info from alice (so
// -benchtime 2000x is 6,000 requests of load).
func BenchmarkFootprint(b *testing.B) {
	need(b)
	info, err := os.Stat(suite.bin)
	if err != nil {
		b.Fatal(err)
	}
	alice := login(b, "alice", harness.HomeDomain)
	ctx := context.Background()
	pid := suite.gateway.cmd.Process.Pid
	// Idle is a second with no stanza, after which the gateway hands its
	// free heap back (gateway.idleRelease); wait a little longer.
	idle := func() (rss, anon, file int64) {
		time.Sleep(3 * time.Second)
		return procStatus(b, pid, "VmRSS:"), procStatus(b, pid, "RssAnon:"), procStatus(b, pid, "RssFile:")
	}
	rss, anon, file := idle()
	page := `<query xmlns='http://jabber.org/protocol/disco#items'><set xmlns='http://jabber.org/protocol/rsm'><max>50</max></set></query>`
	for b.Loop() {
		for _, q := range [][3]string{
			{"get", harness.ComponentDomain, page},
			{"set", harness.ComponentDomain, searchForm("weath")},
			{"get", "weather@" + harness.ComponentDomain, discoInfo},
		} {
			if raw, err := alice.IQ(ctx, q[0], q[1], q[2]); err != nil || !strings.Contains(raw, "result") {
				b.Fatalf("%v %.300s", err, raw)
			}
		}
	}
	b.StopTimer()
	if os.Getenv("AGENTGW_FOOTPRINT_TRACE") != "" {
		// The anonymous memory every 250 ms for 10 s after the load:
		// when the idle release comes, and what grows back after it.
		var trace []string
		for i := range 40 {
			time.Sleep(250 * time.Millisecond)
			trace = append(trace, fmt.Sprintf("%.2fs:%.3f", float64(i+1)/4, float64(procStatus(b, pid, "RssAnon:"))/1e6))
		}
		b.Logf("after load, anon MB: %s", strings.Join(trace, " "))
	}
	loadedRSS, loadedAnon, _ := idle()
	if dir := os.Getenv("AGENTGW_FOOTPRINT_SMAPS"); dir != "" {
		// Where the anonymous memory is, by mapping (docs/BENCHMARKS.md).
		proc := "/proc/" + strconv.Itoa(pid)
		if smaps, err := os.ReadFile(proc + "/smaps"); err == nil {
			os.WriteFile(filepath.Join(dir, "smaps-"+strconv.Itoa(pid)), smaps, 0o644)
		}
		// And its open files: a SQLite connection holds the database's.
		var fds []string
		ents, _ := os.ReadDir(proc + "/fd")
		for _, e := range ents {
			if to, err := os.Readlink(proc + "/fd/" + e.Name()); err == nil {
				fds = append(fds, e.Name()+" "+to)
			}
		}
		os.WriteFile(filepath.Join(dir, "fds-"+strconv.Itoa(pid)), []byte(strings.Join(fds, "\n")+"\n"), 0o644)
	}
	b.ReportMetric(float64(info.Size())/1e6, "binary-MB")
	b.ReportMetric(float64(rss)/1e6, "idle-RSS-MB")
	// Most of the RSS is the binary's own pages, mapped from the file and
	// shared; RssAnon is what the process itself allocated.
	b.ReportMetric(float64(anon)/1e6, "idle-anon-MB")
	b.ReportMetric(float64(file)/1e6, "idle-file-MB")
	b.ReportMetric(float64(loadedRSS)/1e6, "after-load-idle-RSS-MB")
	b.ReportMetric(float64(loadedAnon)/1e6, "after-load-idle-anon-MB")
}

// procStatus reads a size field (VmRSS:, RssAnon:) of a process from
// /proc, in bytes.
func procStatus(b *testing.B, pid int, field string) int64 {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), field); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				b.Fatal(err)
			}
			return kb * 1024
		}
	}
	b.Fatal("no " + field)
	return 0
}
