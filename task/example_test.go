package task_test

import (
	"fmt"
	"time"

	"agentgw/manifest"
	"agentgw/runtime"
	"agentgw/task"
	"agentgw/wire"

	"mellium.im/xmpp/jid"
)

// Example walks one invocation through admission, start, progress and
// completion, as the gateway drives it: each Step is committed in one
// transaction, then its events are sent.
func Example() {
	man, _ := manifest.Parse([]byte(testManifest), manifest.Options{})
	m := task.NewMachine(task.Config{Rand: &counter{}}) // production: Rand nil
	now := time.Date(2026, 7, 27, 19, 14, 1, 0, time.UTC)
	from := jid.MustParse("planner@agents.example/worker")

	el, _ := wire.Parse(`<invoke xmlns='urn:xmpp:agent-task:0' api-version='1.4.0'
	    request-id='req-91a6d2f49c514f44a2d223f0f97bd9fe' tool='forecast.get'>
	  <manifest-hash><hash xmlns='urn:xmpp:hashes:2' algo='sha-256'>` + man.HashBase64() + `</hash></manifest-hash>
	  <arguments media-type='application/json'>{"city":"Riga"}</arguments>
	</invoke>`)
	inv, err := task.ParseInvoke(el) // before authorization: syntax only
	if err != nil {
		panic(err)
	}
	// ... authorize from for the endpoint and tool, load the manifest ...
	req, err := m.Prepare(inv, from, man)
	if err != nil {
		panic(err)
	}
	adm, err := m.Admit(req, nil, now) // nil: no task with this request ID yet
	if err != nil {
		panic(err)
	}
	t := adm.Task // insert, commit, then answer:
	fmt.Println(mustMarshal(adm.Accepted()))

	show := func(s task.Step, err error) {
		if err != nil {
			panic(err)
		}
		t = s.Task // write the task row, insert the events and input records, commit
		for _, ev := range s.Events {
			fmt.Println(mustMarshal(ev)) // send ev.Message(endpoint, t.Route)
		}
	}
	show(m.Start(t, now.Add(time.Second)))
	pct := 50.0
	show(m.Progress(t, runtime.Progress{Percent: &pct, Stage: "fetch"}, now.Add(2*time.Second)))
	res, _ := runtime.TextResult("Light rain, 18 C", map[string]string{"summary": "Light rain, 18 C"})
	tool, _ := man.Tool(t.Tool)
	show(m.Complete(t, res, tool.OutputSchema, now.Add(3*time.Second)))

	// Output:
	// <accepted created='2026-07-27T19:14:01Z' request-id='req-91a6d2f49c514f44a2d223f0f97bd9fe' retain-until='2026-07-28T19:24:01Z' revision='0' task-id='task-0102030405060708090a0b0c0d0e0f10' xmlns='urn:xmpp:agent-task:0'/>
	// <event event-id='evt-1112131415161718191a1b1c1d1e1f20' revision='1' task-id='task-0102030405060708090a0b0c0d0e0f10' type='status' xmlns='urn:xmpp:agent-task:0'>{"state":"running","updatedAt":"2026-07-27T19:14:02Z"}</event>
	// <event event-id='evt-2122232425262728292a2b2c2d2e2f30' revision='2' task-id='task-0102030405060708090a0b0c0d0e0f10' type='progress' xmlns='urn:xmpp:agent-task:0'>{"percent":50,"stage":"fetch"}</event>
	// <event event-id='evt-3132333435363738393a3b3c3d3e3f40' revision='3' task-id='task-0102030405060708090a0b0c0d0e0f10' type='completed' xmlns='urn:xmpp:agent-task:0'>{"result":{"content":[{"text":"Light rain, 18 C","type":"text"}],"isError":false,"structuredContent":{"summary":"Light rain, 18 C"}}}</event>
}

func mustMarshal(v marshaler) string {
	s, err := wire.Marshal(v.TokenReader())
	if err != nil {
		panic(err)
	}
	return s
}
