package api_test

import (
	"context"
	"encoding/xml"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	"agentgw/api"
	"agentgw/db"
	"agentgw/directory"
	"agentgw/manifest"
	"agentgw/policy"
	"agentgw/surface"
	"agentgw/wire"

	"mellium.im/xmpp/jid"
	"mellium.im/xmpp/stanza"
)

// modelSteps sets the length of TestModelExactVersion; 0 is the bounded
// run of CI. The longer run is in docs/fuzzing.md.
var modelSteps = flag.Int("model.steps", 0, "steps of the exact-version model tests (0: the bounded CI run)")

// modelSeed replays a logged run of the model tests (0: a new seed).
var modelSeed = flag.Uint64("model.seed", 0, "seed of the model tests (0: a new one, logged)")

// modelBound is how long a write made through another Store may take to
// reach the serving Store's memory (db.MemRecheck, 250 ms), with room for
// a loaded machine.
const modelBound = 400 * time.Millisecond

// modelJIDs are the endpoints the model changes. Those under "mcp" keep
// one name and title across versions, as an MCP import does: their
// search text never changes, only the active version.
var modelJIDs = []string{"a@agents.example", "b@agents.example", "mcp1@agents.example", "mcp2@agents.example"}

const modelVersions = 4

// modelManifest is version v of endpoint j: its input schema differs per
// version, so each version has its own manifest and schema hash.
func modelManifest(t testing.TB, j string, v int) *manifest.Manifest {
	t.Helper()
	name := fmt.Sprintf("%s-v%d", j[:1], v)
	if j[:3] == "mcp" {
		name = j[:4]
	}
	raw := fmt.Sprintf(`{"manifestSpecVersion":"0","agent":{"jid":%q,"name":%q,"version":"mcp-%d"},"tools":[`+
		`{"name":"t","inputSchema":{"type":"object","properties":{"p%d":{"type":"string"}}}},`+
		`{"name":"u%d","inputSchema":{"type":"object"}}]}`, j, name, v, v, v%2)
	m, err := manifest.Parse([]byte(raw), manifest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// modelWorld holds the three handles on one file: serving (the gateway's
// Store, answering from memory), writer (another process: the CLI, a
// sync) and ref, read only by key or through Status, which never answer
// from memory: the SQL path.
type modelWorld struct {
	t                     *testing.T
	ctx                   context.Context
	serving, writer       *db.Store
	ref                   *db.Store
	svc                   *api.Service
	pol                   *policy.Policy
	alice, mallory        jid.JID
	manifests             map[string][]*manifest.Manifest // by JID, index v-1
	rnd                   *rand.Rand
	writes, checks, waits int
}

func openModelStore(t *testing.T, path string) *db.Store {
	t.Helper()
	s, err := db.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func newModelWorld(t *testing.T, seed uint64) *modelWorld {
	path := filepath.Join(t.TempDir(), "agentgw.db")
	w := &modelWorld{t: t, ctx: context.Background(), rnd: rand.New(rand.NewPCG(seed, 25)),
		alice: jid.MustParse("alice@home.example/r"), mallory: jid.MustParse("mallory@else.example/r"),
		manifests: map[string][]*manifest.Manifest{}}
	w.serving = openModelStore(t, path)
	w.writer = openModelStore(t, path)
	w.ref = openModelStore(t, path)
	w.pol = &policy.Policy{Visibility: []policy.Grant{{Principals: []policy.Principal{{Domain: "home.example"}}, AllEndpoints: true}}}
	w.svc = &api.Service{Store: w.serving, Dir: &directory.Service{Store: w.serving, PageMax: 50}, Domain: jid.MustParse("agents.example")}
	for _, j := range modelJIDs {
		for v := 1; v <= modelVersions; v++ {
			w.manifests[j] = append(w.manifests[j], modelManifest(t, j, v))
		}
	}
	return w
}

func rowOf(m *manifest.Manifest) db.Version {
	return db.Version{JID: m.JID, Version: m.Version, Hash: m.Hash, Canonical: m.Canonical,
		Name: m.Name, Title: m.Title, Description: m.Description}
}

// step makes one random write, as another process would, or (now and
// then) as the serving gateway's own MCP import does.
func (w *modelWorld) step() string {
	j := modelJIDs[w.rnd.IntN(len(modelJIDs))]
	v := 1 + w.rnd.IntN(modelVersions)
	m := w.manifests[j][v-1]
	s, who := w.writer, "writer"
	if w.rnd.IntN(5) == 0 {
		s, who = w.serving, "serving"
	}
	var err error
	op := ""
	switch w.rnd.IntN(8) {
	case 0, 1:
		op = "import"
		_, err = s.RecordImport(w.ctx, rowOf(m), nil)
	case 2:
		op = "register"
		_, err = s.RegisterVersion(w.ctx, rowOf(m), db.OriginAdmin)
	case 3, 4:
		op = "activate"
		err = s.Activate(w.ctx, j, m.Version, &m.Hash)
	case 5:
		op = "deactivate"
		err = s.Deactivate(w.ctx, j)
	case 6:
		op = "remove-version"
		err = s.RemoveVersion(w.ctx, j, m.Version)
	case 7:
		op = "remove-endpoint"
		if w.rnd.IntN(3) == 0 {
			err = s.RemoveEndpoint(w.ctx, j)
		}
	}
	switch {
	case err == nil:
		w.writes++
	case errors.Is(err, db.ErrNotFound), errors.Is(err, db.ErrActive), errors.Is(err, db.ErrConflict),
		errors.Is(err, db.ErrRetained):
		// A write the state refuses: the model goes on.
	default:
		w.t.Fatalf("%s %s %s %s: %v", who, op, j, m.Version, err)
	}
	return fmt.Sprintf("%s %s %s %s (%v)", who, op, j, m.Version, err)
}

// answer runs one hot read as the gateway does: first under
// db.MemoryOnly (the read loop), and on ErrWouldBlock on a worker. Half
// the reads start with the cache of parsed manifests empty, as a busy
// gateway's eviction leaves it: a warm cache hides the paths of a miss.
func answer[T any](w *modelWorld, read func(context.Context) (T, error)) (T, error) {
	if w.rnd.IntN(2) == 0 {
		api.ForgetParsed()
	}
	out, err := read(db.MemoryOnly(w.ctx))
	if errors.Is(err, db.ErrWouldBlock) {
		return read(w.ctx)
	}
	return out, err
}

func (w *modelWorld) request(from jid.JID, to, payload string) surface.Request {
	el, err := wire.Parse(payload)
	if err != nil {
		w.t.Fatal(err)
	}
	return surface.Request{Type: stanza.GetIQ, Policy: w.pol, From: from, To: jid.MustParse(to), Payload: el}
}

func parsed(t *testing.T, r xml.TokenReader) wire.Element {
	t.Helper()
	s, err := wire.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	el, err := wire.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return el
}

// truth is the SQL path's answer for endpoint j: its active version
// ("" when inactive or missing) and which versions are stored.
func (w *modelWorld) truth(j string) (active string, stored map[string]bool) {
	stored = map[string]bool{}
	st, err := w.ref.Status(w.ctx, j)
	if errors.Is(err, db.ErrNotFound) {
		return "", stored
	} else if err != nil {
		w.t.Fatal(err)
	}
	for _, v := range st.Versions {
		stored[v.Version] = true
	}
	return st.Active, stored
}

// check asks every hot read of the agent API about every endpoint and
// version. Each answer names exactly the version asked for, with that
// version's bytes and hashes, or is <item-not-found/>; an unnamed request
// answers some version with its own bytes. When fresh (the bound has
// passed since the last write), each answer is also the SQL path's: found
// exactly when the endpoint is active and the version stored, and the
// unnamed one is the active version.
func (w *modelWorld) check(fresh bool, last string) {
	t := w.t
	w.checks++
	for _, j := range modelJIDs {
		active, stored := w.truth(j)
		for v := 0; v <= modelVersions; v++ {
			name := ""
			var want *manifest.Manifest
			if v > 0 {
				want = w.manifests[j][v-1]
				name = want.Version
			}
			wantFound := active != "" && (name == "" || stored[name])
			where := fmt.Sprintf("%s version %q after %s (fresh %v; SQL: active %q)", j, name, last, fresh, active)
			exact := func(what string, err error, got string, gotHash wire.Hash) {
				t.Helper()
				switch {
				case errors.Is(err, surface.ErrItemNotFound):
					if fresh && wantFound {
						t.Fatalf("%s of %s: item-not-found, SQL has it", what, where)
					}
					return
				case err != nil:
					t.Fatalf("%s of %s: %v", what, where, err)
				}
				if fresh && !wantFound {
					t.Fatalf("%s of %s: answered %s, SQL has none", what, where, got)
				}
				if name != "" && (got != name || gotHash != wire.Hash(want.Hash)) {
					t.Fatalf("%s of %s: answered version %s", what, where, got)
				}
				if name == "" && fresh && got != active {
					t.Fatalf("%s of %s: answered %s", what, where, got)
				}
			}

			// The manifest.
			mr := `<manifest-request xmlns='urn:xmpp:agent-api:0'/>`
			if name != "" {
				mr = `<manifest-request xmlns='urn:xmpp:agent-api:0' version='` + name + `'/>`
			}
			r, err := answer(w, func(ctx context.Context) (xml.TokenReader, error) {
				return w.svc.ManifestRequest(ctx, w.request(w.alice, j, mr))
			})
			var got api.Manifest
			if err == nil {
				if got, err = api.ParseManifest(parsed(t, r)); err != nil {
					t.Fatal(err)
				}
				if !api.VerifyJSON(got.JSON, got.Hash) {
					t.Fatalf("manifest of %s: bytes do not hash to %s", where, got.Hash.Base64())
				}
				if reg := w.manifests[j][got.Version[len("mcp-")]-'1']; string(reg.Canonical) != got.JSON {
					t.Fatalf("manifest of %s: %s with other bytes", where, got.Version)
				}
			}
			exact("manifest", err, got.Version, got.Hash)
			if name == "" {
				continue
			}

			// The input schema of tool t, under the version's hash.
			sr := `<schema-request xmlns='urn:xmpp:agent-api:0' direction='input' tool='t' version='` + name + `'>` +
				`<hash xmlns='urn:xmpp:hashes:2' algo='sha-256'>` + wire.Hash(want.Hash).Base64() + `</hash></schema-request>`
			r, err = answer(w, func(ctx context.Context) (xml.TokenReader, error) {
				return w.svc.SchemaRequest(ctx, w.request(w.alice, j, sr))
			})
			var sch api.Schema
			if err == nil {
				if sch, err = api.ParseSchema(parsed(t, r)); err != nil {
					t.Fatal(err)
				}
				tool, _ := want.Tool("t")
				if sch.SchemaHash != wire.Hash(tool.InputHash) {
					t.Fatalf("schema of %s: another version's schema", where)
				}
			}
			exact("schema", err, sch.Version, sch.ManifestHash)

			// The tool collection, its items, and the tool node.
			tools := manifest.ToolsNode(name)
			info, err := answer(w, func(ctx context.Context) (wire.InfoResult, error) {
				return w.svc.NodeInfo(ctx, w.request(w.alice, j, `<query xmlns='http://jabber.org/protocol/disco#info'/>`), tools)
			})
			exact("tool collection", err, name, wire.Hash(want.Hash))
			if err == nil && info.Node != tools {
				t.Fatalf("tool collection of %s: node %s", where, info.Node)
			}
			items, err := answer(w, func(ctx context.Context) (wire.ItemsResult, error) {
				return w.svc.NodeItems(ctx, w.request(w.alice, j, `<query xmlns='http://jabber.org/protocol/disco#items'/>`), tools)
			})
			exact("tool items", err, name, wire.Hash(want.Hash))
			if err == nil {
				if len(items.Items) != len(want.Tools) {
					t.Fatalf("tool items of %s: %d items, want %d", where, len(items.Items), len(want.Tools))
				}
				for _, it := range items.Items {
					if v, _, err := manifest.ParseToolNode(it.Node); err != nil || v != name {
						t.Fatalf("tool items of %s: item %s", where, it.Node)
					}
					if _, tn, _ := manifest.ParseToolNode(it.Node); tn != "t" {
						if _, ok := want.Tool(tn); !ok {
							t.Fatalf("tool items of %s: another version's tool %s", where, tn)
						}
					}
				}
			}
			node := manifest.ToolNode(name, "t")
			info, err = answer(w, func(ctx context.Context) (wire.InfoResult, error) {
				return w.svc.NodeInfo(ctx, w.request(w.alice, j, `<query xmlns='http://jabber.org/protocol/disco#info'/>`), node)
			})
			apiVersion, inputHash := "", ""
			if err == nil && len(info.Forms) == 1 {
				for _, f := range info.Forms[0].Fields {
					switch f.Var {
					case "api_version":
						apiVersion = f.Values[0]
					case "input_schema_hash_value":
						inputHash = f.Values[0]
					}
				}
				tool, _ := want.Tool("t")
				if inputHash != wire.Hash(tool.InputHash).Base64() {
					t.Fatalf("tool node of %s: another version's schema hash", where)
				}
			}
			exact("tool node", err, apiVersion, wire.Hash(want.Hash))

			// A requester who may see nothing gets the same not-found.
			if _, err := answer(w, func(ctx context.Context) (xml.TokenReader, error) {
				return w.svc.ManifestRequest(ctx, w.request(w.mallory, j, mr))
			}); !errors.Is(err, surface.ErrItemNotFound) {
				t.Fatalf("hidden manifest of %s: %v", where, err)
			}
		}
	}
}

// TestModelExactVersion interleaves activations, registrations, imports,
// deactivations and removals made through a separate Store (as the CLI
// and `agentgw endpoint sync` write) and, now and then, through the
// serving Store itself (the gateway's own MCP import), with every hot
// read of the agent API, answered as the gateway answers them (from
// memory on the read loop, else on a worker). After each write every
// named answer must be exactly the version named or <item-not-found/>;
// once the bound has passed, every answer must be the SQL path's.
func TestModelExactVersion(t *testing.T) {
	steps := *modelSteps
	if steps == 0 {
		steps = 40
	}
	seed := *modelSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (steps %d)", seed, steps)
	w := newModelWorld(t, seed)
	last := "nothing"
	w.check(true, last)
	for i := 0; i < steps; i++ {
		last = w.step()
		w.check(false, last)
		if w.rnd.IntN(3) == 0 || i == steps-1 {
			time.Sleep(modelBound)
			w.waits++
			w.check(true, last)
		}
	}
	t.Logf("%d writes, %d checks, %d waits for the bound", w.writes, w.checks, w.waits)
}
