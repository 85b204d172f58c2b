package account

import (
	"fmt"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MaxWaitsPerToken bounds the WaitForMessage calls one token (or the
// stdio client) has in progress at once.
const MaxWaitsPerToken = 4

// TokenLimits bound the WaitForMessage calls each token (or the stdio
// client) has in progress on one MCP server (MaxWaitsPerToken). The zero
// value is ready to use. (Sessions per token are layer.Sessions.)
type TokenLimits struct {
	mu sync.Mutex
	// waiters counts the WaitForMessage calls in progress, by token.
	waiters map[string]int
}

// StartWait counts one more WaitForMessage of the request's token, or
// reports false when it already has MaxWaitsPerToken.
func (l *TokenLimits) StartWait(req mcp.Request) (done func(), ok bool) {
	key := "stdio"
	if ex := req.GetExtra(); ex != nil && ex.TokenInfo != nil {
		key = ex.TokenInfo.UserID
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.waiters[key] >= MaxWaitsPerToken {
		return nil, false
	}
	if l.waiters == nil {
		l.waiters = map[string]int{}
	}
	l.waiters[key]++
	return func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.waiters[key]--; l.waiters[key] <= 0 {
			delete(l.waiters, key)
		}
	}, true
}

// WaitRefused is the text of a WaitForMessage refused by StartWait.
var WaitRefused = fmt.Sprintf("this token already has %d WaitForMessage calls in progress: wait for one to return", MaxWaitsPerToken)
