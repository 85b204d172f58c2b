package mcpface

import (
	"net/http"
	"time"

	"agentgw/mcpface/account"
)

// Limits of a Streamable HTTP listener, `agentgw mcp -http` and [chat]
// mcp_listen alike (docs/limits.md).
const (
	// HTTPReadHeaderTimeout and HTTPReadTimeout bound reading a request's
	// header and the whole request.
	HTTPReadHeaderTimeout = 10 * time.Second
	HTTPReadTimeout       = 30 * time.Second
	// HTTPWriteTimeout bounds writing an answer: the longest
	// WaitForMessage (300 s) and a margin. A server-sent event stream
	// (GET at Path) is not bounded by it: it lives as long as its session.
	HTTPWriteTimeout = account.MaxWaitSeconds*time.Second + 30*time.Second
	// HTTPIdleTimeout closes a keep-alive connection idle that long.
	HTTPIdleTimeout = 30 * time.Second
	// HTTPMaxHeaderBytes bounds a request's header.
	HTTPMaxHeaderBytes = 64 << 10
)

// NewHTTPServer is the http.Server of a Streamable HTTP listener serving
// h: its timeouts and header bound are the HTTP* limits, and the write
// deadline of a GET at Path (the client's stream of server-sent events,
// bounded by the sessions per token and the session idle timeout) is
// lifted.
func NewHTTPServer(h http.Handler) *http.Server {
	return &http.Server{Handler: sseUnbounded(h), ReadHeaderTimeout: HTTPReadHeaderTimeout, ReadTimeout: HTTPReadTimeout,
		WriteTimeout: HTTPWriteTimeout, IdleTimeout: HTTPIdleTimeout, MaxHeaderBytes: HTTPMaxHeaderBytes}
}

// sseUnbounded lifts the write deadline of a GET at Path.
func sseUnbounded(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && r.URL.Path == Path {
			_ = http.NewResponseController(w).SetWriteDeadline(time.Time{})
		}
		h.ServeHTTP(w, r)
	})
}
