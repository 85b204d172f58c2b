package metrics_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"agentgw/metrics"

	"mellium.im/xmpp/stanza"
)

// TestText: the exposition of each kind of family, byte for byte.
func TestText(t *testing.T) {
	c := metrics.NewCounter("t_requests_total", "Requests \\ with\nlines.", "kind", "outcome")
	c.Inc("a", "result")
	c.Add(2, "a", `bad"one`)
	h := metrics.NewHistogram("t_seconds", "Time.", []float64{0.1, 1})
	h.Observe(0.05)
	h.Observe(0.5)
	h.Observe(5)
	g := metrics.NewGaugeFunc("t_tasks", "Tasks.", "state")
	g.Set(func() map[string]float64 { return map[string]float64{"running": 2, "completed": 1} })

	var b bytes.Buffer
	for _, m := range []interface{ WriteText(io.Writer) }{c, h, g} {
		m.WriteText(&b)
	}
	want := `# HELP t_requests_total Requests \\ with\nlines.
# TYPE t_requests_total counter
t_requests_total{kind="a",outcome="bad\"one"} 2
t_requests_total{kind="a",outcome="result"} 1
# HELP t_seconds Time.
# TYPE t_seconds histogram
t_seconds_bucket{le="0.1"} 1
t_seconds_bucket{le="1"} 2
t_seconds_bucket{le="+Inf"} 3
t_seconds_sum 5.55
t_seconds_count 3
# HELP t_tasks Tasks.
# TYPE t_tasks gauge
t_tasks{state="completed"} 1
t_tasks{state="running"} 2
`
	if b.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", b.String(), want)
	}
}

// TestIQKinds: a namespace the gateway does not know is "other", so peers
// cannot create series; errors are counted by condition.
func TestIQKinds(t *testing.T) {
	before := metrics.IQRequests.Value("other", "item-not-found")
	metrics.IQ("urn:example:made-up", stanza.Error{Type: stanza.Cancel, Condition: stanza.ItemNotFound}, time.Millisecond)
	if got := metrics.IQRequests.Value("other", "item-not-found"); got != before+1 {
		t.Errorf("other/item-not-found = %d, want %d", got, before+1)
	}
	before = metrics.IQRequests.Value("ping", "internal-server-error")
	metrics.IQ("urn:xmpp:ping", errors.New("boom"), -1)
	if got := metrics.IQRequests.Value("ping", "internal-server-error"); got != before+1 {
		t.Errorf("ping/internal-server-error = %d", got)
	}
}

// TestServe: the listener serves the catalog in the text format.
func TestServe(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	addr, err := metrics.Serve(ctx, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	metrics.IQ("http://jabber.org/protocol/disco#info", nil, 2*time.Millisecond)
	resp, err := http.Get("http://" + addr.String() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != metrics.ContentType {
		t.Fatalf("%s %s", resp.Status, resp.Header.Get("Content-Type"))
	}
	for _, want := range []string{
		"\nagentgw_iq_requests_total{kind=\"disco_info\",outcome=\"result\"} ",
		"\nagentgw_iq_duration_seconds_bucket{kind=\"disco_info\",le=\"0.0025\"} ",
		"\nagentgw_stream_reconnects_total 0\n",
		"\nagentgw_task_commit_batch_size_count 0\n",
		"\nagentgw_goroutines ",
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("exposition lacks %q:\n%s", want, body)
		}
	}
	if _, err := metrics.Serve(ctx, addr.String()); err == nil {
		t.Error("a second listener on the same address succeeded")
	}
}
