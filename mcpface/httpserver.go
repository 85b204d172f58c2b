package mcpface

import (
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"agentgw/agentclient"
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
	HTTPWriteTimeout = MaxWaitSeconds*time.Second + 30*time.Second
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

// Guard refuses with 403, before anything else sees the request, one whose
// Origin is not in allowed (browsers send it; MCP requires servers to
// check it against DNS rebinding; none allowed refuses every request that
// carries one), and, on a loopback listener, one whose Host is not a
// loopback name (a rebound name's page). It covers every path.
func Guard(next http.Handler, allowed []string, log *slog.Logger) http.Handler {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	origins := map[string]bool{}
	for _, o := range allowed {
		origins[strings.ToLower(o)] = true
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if vs := r.Header.Values("Origin"); len(vs) > 0 && (len(vs) > 1 || !origins[strings.ToLower(vs[0])]) {
			log.Info("mcp http: foreign origin refused", "remote", r.RemoteAddr, "origin", agentclient.SafeText(vs[0], 200))
			http.Error(w, "forbidden: origin not allowed", http.StatusForbidden)
			return
		}
		if local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok && loopbackAddr(local.String()) && !loopbackAddr(r.Host) {
			log.Info("mcp http: non-loopback host refused", "remote", r.RemoteAddr, "host", agentclient.SafeText(r.Host, 200))
			http.Error(w, "forbidden: invalid Host header", http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// loopbackAddr reports whether host[:port] names the loopback interface.
func loopbackAddr(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
