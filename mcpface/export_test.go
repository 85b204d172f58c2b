package mcpface

import "context"

// Elicitable is elicitable, for the tests.
var Elicitable = elicitable

// TokenOwner is the owner of the MCP tasks of token acting as account.
func TokenOwner(token []byte, account string) string { return tokenOwner(account, tokenUserID(token)) }

// Queue stores m as the account's writer does and wakes the WaitForMessage
// calls in progress, for the tests.
func (a *Account) Queue(ctx context.Context, m MessageResponse) {
	a.commit(ctx, []ingestItem{{m: m}})
}
