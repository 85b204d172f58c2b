package exec_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"agentgw/runtime/exec"
)

// TestChat: the program reads one line with the conversation handle and
// the text, and each line it writes is a reply; configured env values are
// redacted from replies.
func TestChat(t *testing.T) {
	got := filepath.Join(t.TempDir(), "in.json")
	prog := script(t, `IFS= read -r line; printf '%s\n' "$line" > `+got+`
printf '{"type":"reply","text":"one"}\n'
printf '{"type":"reply","text":"the key is %s"}\n' "$API_KEY"
printf '{"type":"reply","text":"three"}\n'
`)
	rt, err := exec.New(exec.Options{Command: []string{prog}, Env: []string{"API_KEY=sk-very-secret-value"}})
	if err != nil {
		t.Fatal(err)
	}
	replies, diag, err := rt.Chat(context.Background(), exec.ChatMessage{Conversation: "c-0123", Text: "hello", Lang: "en"}, 2, 10*time.Second)
	if err != nil {
		t.Fatalf("Chat: %v (%+v)", err, diag)
	}
	if len(replies) != 2 || replies[0] != "one" || strings.Contains(replies[1], "sk-very-secret-value") {
		t.Errorf("replies = %q", replies)
	}
	raw, err := os.ReadFile(got)
	if err != nil {
		t.Fatal(err)
	}
	var in map[string]string
	if err := json.Unmarshal(raw, &in); err != nil {
		t.Fatalf("input line %q: %v", raw, err)
	}
	want := map[string]string{"type": "message", "protocol": exec.ChatProtocol, "conversation": "c-0123", "text": "hello", "lang": "en"}
	for k, v := range want {
		if in[k] != v {
			t.Errorf("input %s = %q, want %q (line %s)", k, in[k], v, raw)
		}
	}
	if len(in) != len(want) {
		t.Errorf("input line has more than the message: %s", raw)
	}
}

// TestChatBounds: a program that breaks the protocol, fails, or outlives
// its time gets an error; the slow one is stopped.
func TestChatBounds(t *testing.T) {
	for _, c := range []struct {
		name, body string
	}{
		{"protocol", `read line; echo 'not json'`},
		{"status", `read line; printf '{"type":"reply","text":"x"}\n'; exit 3`},
		{"slow", `read line; sleep 30`},
	} {
		t.Run(c.name, func(t *testing.T) {
			rt, err := exec.New(exec.Options{Command: []string{script(t, c.body)}, KillGrace: 200 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			_, _, err = rt.Chat(context.Background(), exec.ChatMessage{Conversation: "c-1", Text: "x"}, 8, 500*time.Millisecond)
			if err == nil {
				t.Fatal("no error")
			}
			if time.Since(start) > 5*time.Second {
				t.Errorf("took %s", time.Since(start))
			}
		})
	}
}

// TestChatHeldAfterStdout: a program that closes its output, or writes a
// line that is not a reply, and then lingers is still held to its time
// and to its context: it is stopped (SIGTERM, then SIGKILL to its group)
// and Chat returns within the bound.
func TestChatHeldAfterStdout(t *testing.T) {
	for _, c := range []struct {
		name, body string
		d          time.Duration
		cancel     bool
	}{
		{"closed/deadline", `read line; exec >&-; trap '' TERM; sleep 20`, 500 * time.Millisecond, false},
		{"bad line/deadline", `read line; echo 'not json'; trap '' TERM; sleep 20`, 10 * time.Second, false},
		{"closed/context", `read line; exec >&-; sleep 20`, time.Minute, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			rt, err := exec.New(exec.Options{Command: []string{script(t, c.body)}, KillGrace: 300 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if c.cancel {
				time.AfterFunc(500*time.Millisecond, cancel)
			}
			start := time.Now()
			_, _, err = rt.Chat(ctx, exec.ChatMessage{Conversation: "c-1", Text: "x"}, 8, c.d)
			if err == nil {
				t.Error("no error")
			}
			if took := time.Since(start); took > 4*time.Second {
				t.Errorf("Chat returned after %s: the program was not stopped", took)
			}
		})
	}
}
