// Package mcptest is an MCP server for the tests of package mcp: a go-sdk
// server whose fixture tools cover the bridge's edge cases, plus a thin
// layer for what the go-sdk lacks on the server side (execution in
// tools/list, MCP Tasks, raw URL-mode elicitation).
//
// Its tools (echo, fail, bad-output, progress, ask, ask-legacy, ask-url,
// draft07, untranslatable, lookbehind, crash, env, research, slow-task;
// tools/list is paginated, PageSize tools per page) and what each covers:
// docs/mcp.md, "The fixture tools".
package mcptest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// LegacyVersions are the revisions the fixture server speaks.
var LegacyVersions = []string{"2025-11-25", "2025-06-18", "2025-03-26"}

// PageSize is the tools/list page size, small so that imports paginate.
const PageSize = 3

// Options configures a Server.
type Options struct {
	// Crashable adds the crash tool, which exits the process.
	Crashable bool
}

// TaskFunc is the body of a tool that runs as an MCP task.
type TaskFunc func(ctx context.Context, tc *TaskContext, args json.RawMessage) (json.RawMessage, error)

// Server is the fixture server.
type Server struct {
	srv         *sdk.Server
	taskTools   map[string]TaskFunc
	taskSupport map[string]string

	mu     sync.Mutex
	layer  *layer
	events []string
	notify chan string
}

// New returns the fixture server.
func New(opts Options) *Server {
	s := &Server{
		srv: sdk.NewServer(&sdk.Implementation{Name: "mcptest", Title: "MCP Test Server", Version: "1.2.3"}, &sdk.ServerOptions{
			PageSize: PageSize,
			// A 2025-11-25 server (server-initiated elicitation, MCP Tasks
			// of that revision): a 2026-07-28 client falls back to
			// initialize. current.go is the 2026-07-28 fixture.
			SupportedProtocolVersions: LegacyVersions,
		}),
		taskTools:   map[string]TaskFunc{},
		taskSupport: map[string]string{},
		notify:      make(chan string, 64),
	}
	s.addTools(opts)
	return s
}

// Events returns the channel on which the server reports what the tests
// wait for ("cancelled:progress", "task-cancelled:ID").
func (s *Server) Events() <-chan string { return s.notify }

func (s *Server) record(ev string) {
	s.mu.Lock()
	s.events = append(s.events, ev)
	s.mu.Unlock()
	select {
	case s.notify <- ev:
	default:
	}
}

func (s *Server) setLayer(l *layer) {
	s.mu.Lock()
	s.layer = l
	s.mu.Unlock()
}

func (s *Server) currentLayer() *layer {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.layer
}

// Dial connects a new in-memory session of the server and returns the
// client's transport; it fits mcp.Options.Dial.
func (s *Server) Dial(ctx context.Context) (sdk.Transport, error) {
	st, ct := sdk.NewInMemoryTransports()
	if _, err := s.srv.Connect(ctx, &layerTransport{inner: st, srv: s}, nil); err != nil {
		return nil, err
	}
	return ct, nil
}

// HTTPHandler serves the server over Streamable HTTP (without the MCP
// Tasks layer), recording the Authorization header it sees.
func (s *Server) HTTPHandler(seen func(http.Header)) http.Handler {
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s.srv }, nil)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if seen != nil {
			seen(r.Header.Clone())
		}
		h.ServeHTTP(w, r)
	})
}

// ServeStdio runs the server on standard input and output until the
// client goes away.
func ServeStdio(ctx context.Context, opts Options) error {
	s := New(opts)
	return s.srv.Run(ctx, &layerTransport{inner: &sdk.StdioTransport{}, srv: s})
}

func text(format string, args ...any) *sdk.CallToolResult {
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: fmt.Sprintf(format, args...)}}}
}

func raw(s string) json.RawMessage { return json.RawMessage(s) }

func (s *Server) addTools(opts Options) {
	obj := raw(`{"type":"object","properties":{},"additionalProperties":false}`)
	s.srv.AddTool(&sdk.Tool{
		Name: "echo", Title: "Echo", Description: "Returns its text.",
		InputSchema:  raw(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`),
		OutputSchema: raw(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`),
		Annotations:  &sdk.ToolAnnotations{ReadOnlyHint: true},
		Meta:         sdk.Meta{"com.example/origin": "mcptest"},
		Icons:        []sdk.Icon{{Source: "https://example.com/icon.png"}},
	}, func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		var a struct{ Text string }
		_ = json.Unmarshal(req.Params.Arguments, &a)
		r := text("%s", a.Text)
		r.StructuredContent = map[string]any{"text": a.Text}
		r.Meta = sdk.Meta{"com.example/echoed": true}
		return r, nil
	})
	s.srv.AddTool(&sdk.Tool{Name: "fail", InputSchema: obj},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			r := text("the tool failed on purpose")
			r.IsError = true
			return r, nil
		})
	s.srv.AddTool(&sdk.Tool{Name: "bad-output", InputSchema: obj,
		OutputSchema: raw(`{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}`)},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			r := text("not a number")
			r.StructuredContent = map[string]any{"n": "x"}
			return r, nil
		})
	s.srv.AddTool(&sdk.Tool{Name: "progress",
		InputSchema: raw(`{"type":"object","properties":{"steps":{"type":"integer"},"block":{"type":"boolean"}}}`)},
		func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			var a struct {
				Steps int
				Block bool
			}
			_ = json.Unmarshal(req.Params.Arguments, &a)
			tok := req.Params.GetProgressToken()
			for i := 1; i <= a.Steps; i++ {
				if tok != nil {
					_ = req.Session.NotifyProgress(ctx, &sdk.ProgressNotificationParams{
						ProgressToken: tok, Progress: float64(i), Total: float64(a.Steps), Message: fmt.Sprintf("step %d", i)})
				}
			}
			if a.Block {
				<-ctx.Done()
				s.record("cancelled:progress")
				return nil, ctx.Err()
			}
			return text("done after %d steps", a.Steps), nil
		})
	s.srv.AddTool(&sdk.Tool{Name: "ask", InputSchema: obj},
		func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			res, err := req.Session.Elicit(ctx, &sdk.ElicitParams{Message: "What is your answer?",
				RequestedSchema: raw(`{"type":"object","properties":{"answer":{"type":"string","maxLength":100}},"required":["answer"]}`)})
			if err != nil {
				return nil, err
			}
			return text("action=%s answer=%v", res.Action, res.Content["answer"]), nil
		})
	s.srv.AddTool(&sdk.Tool{Name: "ask-legacy", InputSchema: obj},
		func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			res, err := req.Session.Elicit(ctx, &sdk.ElicitParams{Message: "Pick a colour.",
				RequestedSchema: raw(`{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"colour":{"type":"string","enum":["r","g"],"enumNames":["Red","Green"]}},"required":["colour"]}`)})
			if err != nil {
				return nil, err
			}
			return text("action=%s colour=%v", res.Action, res.Content["colour"]), nil
		})
	s.srv.AddTool(&sdk.Tool{Name: "ask-url", InputSchema: obj},
		func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			l := s.currentLayer()
			res, err := l.request(ctx, "elicitation/create", map[string]any{
				"mode": "url", "message": "Open this page.", "url": "https://example.com/consent", "elicitationId": "e1"})
			if err != nil {
				return nil, err
			}
			return text("url elicitation: %s", res), nil
		})
	s.srv.AddTool(&sdk.Tool{Name: "draft07", Description: "A draft-07 input schema.", InputSchema: raw(`{
		"$schema": "http://json-schema.org/draft-07/schema#",
		"type": "object",
		"definitions": {"name": {"$id": "#nameDef", "type": "string", "minLength": 1}},
		"properties": {
			"who": {"$ref": "#/definitions/name", "description": "who"},
			"also": {"$ref": "#nameDef"},
			"pair": {"type": "array", "items": [{"type": "string"}, {"type": "integer"}], "additionalItems": false},
			"list": {"type": "array", "items": {"type": "string"}, "additionalItems": {"type": "integer"}},
			"card": {"type": "string"},
			"billing": {"type": "string"}
		},
		"dependencies": {"card": ["billing"], "billing": {"required": ["who"]}},
		"required": ["who"]
	}`)}, func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		return text("ok"), nil
	})
	s.srv.AddTool(&sdk.Tool{Name: "untranslatable", InputSchema: raw(`{
		"$schema": "http://json-schema.org/draft-07/schema#",
		"type": "object",
		"$defs": {"x": {"type": "string"}},
		"properties": {"x": {"$ref": "#/$defs/x"}}
	}`)}, func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) { return text("never"), nil })
	s.srv.AddTool(&sdk.Tool{Name: "lookbehind", InputSchema: raw(
		`{"type":"object","properties":{"x":{"type":"string","pattern":"(?<=a)b"}}}`)},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) { return text("never"), nil })
	if opts.Crashable {
		s.srv.AddTool(&sdk.Tool{Name: "crash", InputSchema: obj},
			func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
				// What a careless server might print: its credentials.
				fmt.Fprintf(os.Stderr, "crashing; token=%s\n", os.Getenv("MCPTEST_SECRET"))
				time.Sleep(50 * time.Millisecond)
				os.Exit(3)
				return nil, nil
			})
		s.srv.AddTool(&sdk.Tool{Name: "env",
			InputSchema: raw(`{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`)},
			func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
				var a struct{ Name string }
				_ = json.Unmarshal(req.Params.Arguments, &a)
				v, ok := os.LookupEnv(a.Name)
				return text("%v:%s", ok, v), nil
			})
	}
	s.addTaskTool("research", raw(`{"type":"object","properties":{"topic":{"type":"string"},"ambiguous":{"type":"boolean"}},"required":["topic"]}`),
		func(ctx context.Context, tc *TaskContext, args json.RawMessage) (json.RawMessage, error) {
			var a struct {
				Topic     string
				Ambiguous bool
			}
			_ = json.Unmarshal(args, &a)
			clar := ""
			for i, stage := range []string{"Gathering sources", "Analyzing content", "Writing report"} {
				tc.Status("working", stage+"...")
				if i == 1 && a.Ambiguous {
					tc.Status("input_required", "Asking for clarification")
					res, err := tc.Elicit(ctx, "Which one?", map[string]any{"type": "object",
						"properties": map[string]any{"interpretation": map[string]any{"type": "string",
							"oneOf": []any{map[string]any{"const": "a", "title": "A"}, map[string]any{"const": "b", "title": "B"}}}},
						"required": []any{"interpretation"}})
					if err != nil {
						return nil, err
					}
					var er struct {
						Action  string
						Content map[string]any
					}
					_ = json.Unmarshal(res, &er)
					clar = fmt.Sprintf(" (%s %v)", er.Action, er.Content["interpretation"])
					tc.Status("working", "Continuing")
				}
				select {
				case <-time.After(150 * time.Millisecond):
				case <-ctx.Done():
					return nil, ctx.Err()
				}
			}
			return json.Marshal(map[string]any{"content": []any{map[string]any{"type": "text", "text": "report on " + a.Topic + clar}}})
		})
	s.addTaskTool("slow-task", obj, func(ctx context.Context, tc *TaskContext, args json.RawMessage) (json.RawMessage, error) {
		tc.Status("working", "waiting")
		<-ctx.Done()
		return nil, ctx.Err()
	})
}

// addTaskTool registers a tool with execution.taskSupport "required". The
// go-sdk handler runs only if a client calls it without a task, which MCP
// forbids.
func (s *Server) addTaskTool(name string, schema json.RawMessage, fn TaskFunc) {
	s.taskTools[name] = fn
	s.taskSupport[name] = "required"
	s.srv.AddTool(&sdk.Tool{Name: name, InputSchema: schema},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			r := text("this tool must be called as a task")
			r.IsError = true
			return r, nil
		})
}
