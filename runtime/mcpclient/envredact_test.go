package mcpclient_test

import (
	"strings"
	"testing"

	"agentgw/runtime/mcpclient"
	"agentgw/runtime/runtimetest"
)

// TestStderrRedactsLiteralEnv: a value configured in the literal env key
// (not a file) is redacted from the stderr tail the runtime reports too.
func TestStderrRedactsLiteralEnv(t *testing.T) {
	const secret = "s3cr3t-in-plain-env"
	log := newStatusLog()
	opts := stdioOptions(t)
	opts.Env = append(opts.Env, "MCPTEST_SECRET="+secret)
	opts.OnStatus = log.record
	r, _ := newRuntime(t, opts)
	rec := runtimetest.NewRecorder()
	start(t, r, call("crash", `{}`), rec)
	next(t, rec, runtimetest.KindFail)
	st := log.waitState(t, mcpclient.StateStopped)
	if strings.Contains(st.LastError, secret) || !strings.Contains(st.LastError, "token=[redacted]") {
		t.Errorf("LastError %q", st.LastError)
	}
}
