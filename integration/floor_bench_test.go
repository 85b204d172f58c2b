package integration

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"agentgw/c2s"
	"agentgw/internal/harness"
)

// BenchmarkFloor measures, interleaved in one run, a client's disco#info
// round trip through Prosody to an endpoint behind the gateway, and to
// the route's floor: floor@floor.example, a second component on the same
// Prosody, a process of its own as the gateway is, that answers every IQ with the endpoint's own disco#info, byte
// for byte (captured from the gateway at the start), and does no other
// work. Both answers cross the same route (client → Prosody → component →
// Prosody → client) with the same bytes, so endpoint/floor is what the
// gateway adds. Prosody's own disco#info is reported beside them.
//
// Beside that repeated read, which the gateway answers from its memo
// after the first times, each round asks a spread pair, as real clients
// do: one of the 260 generated endpoints (agent-NNN) from one of 8 client
// connections of alice, each pair once in 2,080 rounds, and the floor's
// agent-NNN@floor.example, which answers with that endpoint's bytes. Its
// ratio is "spread-endpoint/floor"; "…-paired" is the median of each
// pair's own ratio, which a slow spell between pairs does not move.
//
//	go test ./integration -run XXX -bench Floor -benchtime 2000x -count 2
func BenchmarkFloor(b *testing.B) {
	need(b)
	alice := login(b, "alice", harness.HomeDomain)
	ctx := context.Background()
	endpoint := "weather@" + harness.ComponentDomain
	raw, err := alice.IQ(ctx, "get", endpoint, discoInfo)
	if err != nil || !strings.Contains(raw, "agent-endpoint-info") {
		b.Fatalf("%v %s", err, raw)
	}
	// The floor answers each endpoint's request with that endpoint's
	// bytes, by local part ("" for floor@).
	payloads := map[string]string{"": queryOf(b, raw)}
	spread := agentJIDs(0, numAgents)
	for _, to := range spread {
		got, err := alice.IQ(ctx, "get", to, discoInfo)
		if err != nil || !strings.Contains(got, "agent-endpoint-info") {
			b.Fatalf("%s: %v %s", to, err, got)
		}
		payloads[strings.Split(to, "@")[0]] = queryOf(b, got)
	}
	var clients []*c2s.Client
	for range 8 {
		clients = append(clients, login(b, "alice", harness.HomeDomain))
	}
	stopFloor := startFloor(b, payloads)
	defer stopFloor()
	floor := "floor@" + harness.FloorDomain
	var server, gateway, floorT []time.Duration
	// Which of the two comes first alternates: what the server is still
	// doing after an answer delays the next request (docs/BENCHMARKS.md,
	// "The floor's order"), and that cost fell on the endpoint alone when
	// it always followed the floor. Each order's ratio is reported too.
	var second [2][]time.Duration // [0]: the endpoint after the floor, [1]: the floor after the endpoint
	var first [2][]time.Duration  // [0]: the floor first, [1]: the endpoint first
	var spreadG, spreadF []time.Duration
	askAs := func(c *c2s.Client, to string) time.Duration {
		t0 := time.Now()
		got, err := c.IQ(ctx, "get", to, discoInfo)
		if err != nil || !strings.Contains(got, "agent-endpoint-info") {
			b.Fatalf("%s: %v %s", to, err, got)
		}
		return time.Since(t0)
	}
	ask := func(to string) time.Duration { return askAs(alice, to) }
	round := 0
	for b.Loop() {
		t0 := time.Now()
		if _, err := alice.IQ(ctx, "get", harness.HomeDomain, discoInfo); err != nil {
			b.Fatal(err)
		}
		server = append(server, time.Since(t0))
		if round%2 == 0 {
			f := ask(floor)
			g := ask(endpoint)
			floorT, gateway = append(floorT, f), append(gateway, g)
			first[0], second[0] = append(first[0], f), append(second[0], g)
		} else {
			g := ask(endpoint)
			f := ask(floor)
			floorT, gateway = append(floorT, f), append(gateway, g)
			first[1], second[1] = append(first[1], g), append(second[1], f)
		}
		// The spread pair, in the order of this round's repeated one.
		c := clients[round/len(spread)%len(clients)]
		to := spread[round%len(spread)]
		floorTo := strings.Split(to, "@")[0] + "@" + harness.FloorDomain
		if round%2 == 0 {
			f := askAs(c, floorTo)
			spreadF, spreadG = append(spreadF, f), append(spreadG, askAs(c, to))
		} else {
			g := askAs(c, to)
			spreadF, spreadG = append(spreadF, askAs(c, floorTo)), append(spreadG, g)
		}
		round++
	}
	if round >= 2 {
		b.ReportMetric(float64(p50(second[0]))/float64(p50(first[0])), "endpoint-second/floor-first")
		b.ReportMetric(float64(p50(first[1]))/float64(p50(second[1])), "endpoint-first/floor-second")
	}
	ps, pf, pg := p50(server), p50(floorT), p50(gateway)
	b.ReportMetric(float64(ps.Microseconds()), "server-p50-µs")
	b.ReportMetric(float64(pf.Microseconds()), "floor-p50-µs")
	b.ReportMetric(float64(pg.Microseconds()), "endpoint-p50-µs")
	b.ReportMetric(float64(pg)/float64(pf), "endpoint/floor")
	b.ReportMetric(float64(pf)/float64(ps), "floor/server")
	b.ReportMetric(float64(pg)/float64(ps), "endpoint/server")
	sg, sf := p50(spreadG), p50(spreadF)
	b.ReportMetric(float64(sg.Microseconds()), "spread-endpoint-p50-µs")
	b.ReportMetric(float64(sf.Microseconds()), "spread-floor-p50-µs")
	b.ReportMetric(float64(sg)/float64(sf), "spread-endpoint/floor")
	// The median of each pair's own ratio: the two reads of a pair are
	// asked back to back, so a slow spell of the machine or of Prosody
	// falls on both, where it moves the two p50s apart.
	b.ReportMetric(pairMedian(gateway, floorT), "endpoint/floor-paired")
	b.ReportMetric(pairMedian(spreadG, spreadF), "spread-endpoint/floor-paired")
}

// pairMedian is the median of num[i]/den[i].
func pairMedian(num, den []time.Duration) float64 {
	r := make([]float64, len(num))
	for i := range num {
		r[i] = float64(num[i]) / float64(den[i])
	}
	slices.Sort(r)
	return r[len(r)/2]
}

// queryOf is the <query/> of a disco#info result.
func queryOf(b *testing.B, raw string) string {
	i, j := strings.Index(raw, "<query"), strings.LastIndex(raw, "</query>")
	if i < 0 || j < i {
		b.Fatalf("no query in %s", raw)
	}
	return raw[i : j+len("</query>")]
}

// floorEnv makes the test binary the floor component (TestMain): its
// value is the component address, floorSecretEnv the secret and
// floorPayloadEnv the file of the payloads to answer with (JSON: by the
// local part of the address asked, "" for any other).
const (
	floorEnv        = "AGENTGW_IT_FLOOR"
	floorSecretEnv  = "AGENTGW_IT_FLOOR_SECRET"
	floorPayloadEnv = "AGENTGW_IT_FLOOR_PAYLOAD"
)

// startFloor runs the floor component as a process of its own, as the
// gateway is one, connected to Prosody and answering every IQ get with
// the payload of its address's local part (else of ""), until the
// returned function is called.
func startFloor(b *testing.B, payloads map[string]string) func() {
	b.Helper()
	file := filepath.Join(b.TempDir(), "floor-payload.json")
	js, err := json.Marshal(payloads)
	if err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(file, js, 0o600); err != nil {
		b.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), floorEnv+"="+suite.env.ComponentAddr,
		floorSecretEnv+"="+suite.env.ComponentSecret, floorPayloadEnv+"="+file)
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || line != "ready\n" {
		cmd.Process.Kill()
		cmd.Wait()
		b.Fatalf("floor component: %q %v", line, err)
	}
	return func() {
		cmd.Process.Kill()
		cmd.Wait()
	}
}

// serveFloor is the floor component's process: it connects, says ready
// and answers until its stream ends.
func serveFloor() int {
	js, err := os.ReadFile(os.Getenv(floorPayloadEnv))
	if err != nil {
		fmt.Fprintln(os.Stderr, "floor:", err)
		return 1
	}
	var payloads map[string]string
	if err := json.Unmarshal(js, &payloads); err != nil {
		fmt.Fprintln(os.Stderr, "floor:", err)
		return 1
	}
	conn, err := net.DialTimeout("tcp", os.Getenv(floorEnv), 10*time.Second)
	if err != nil {
		fmt.Fprintln(os.Stderr, "floor:", err)
		return 1
	}
	defer conn.Close()
	fmt.Fprintf(conn, `<?xml version='1.0'?><stream:stream xmlns='jabber:component:accept' xmlns:stream='http://etherx.jabber.org/streams' to='%s'>`, harness.FloorDomain)
	dec := xml.NewDecoder(conn)
	var streamID string
	for streamID == "" {
		tok, err := dec.Token()
		if err != nil {
			fmt.Fprintln(os.Stderr, "floor:", err)
			return 1
		}
		if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "stream" {
			for _, a := range se.Attr {
				if a.Name.Local == "id" {
					streamID = a.Value
				}
			}
		}
	}
	sum := sha1.Sum([]byte(streamID + os.Getenv(floorSecretEnv)))
	fmt.Fprintf(conn, "<handshake>%s</handshake>", hex.EncodeToString(sum[:]))
	for {
		tok, err := dec.Token()
		if err != nil {
			fmt.Fprintln(os.Stderr, "floor: handshake:", err)
			return 1
		}
		if se, ok := tok.(xml.StartElement); ok {
			if se.Name.Local != "handshake" {
				fmt.Fprintf(os.Stderr, "floor: handshake answered with <%s/>\n", se.Name.Local)
				return 1
			}
			dec.Skip()
			break
		}
	}
	fmt.Println("ready")
	var out bytes.Buffer
	for {
		tok, err := dec.Token()
		if err != nil {
			return 0
		}
		se, ok := tok.(xml.StartElement)
		if !ok {
			continue
		}
		var id, from, to, typ string
		for _, a := range se.Attr {
			switch a.Name.Local {
			case "id":
				id = a.Value
			case "from":
				from = a.Value
			case "to":
				to = a.Value
			case "type":
				typ = a.Value
			}
		}
		if err := dec.Skip(); err != nil {
			return 0
		}
		if se.Name.Local != "iq" || (typ != "get" && typ != "set") {
			continue
		}
		out.Reset()
		out.WriteString(`<iq type='result' id='`)
		xml.EscapeText(&out, []byte(id))
		out.WriteString(`' from='`)
		xml.EscapeText(&out, []byte(to))
		out.WriteString(`' to='`)
		xml.EscapeText(&out, []byte(from))
		out.WriteString(`'>`)
		local, _, _ := strings.Cut(to, "@")
		payload, ok := payloads[local]
		if !ok {
			payload = payloads[""]
		}
		out.WriteString(payload)
		out.WriteString(`</iq>`)
		if _, err := conn.Write(out.Bytes()); err != nil {
			return 0
		}
	}
}
