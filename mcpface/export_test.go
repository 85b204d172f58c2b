package mcpface

// Elicitable is elicitable, for the tests.
var Elicitable = elicitable

// TokenOwner is the owner of the MCP tasks of token acting as account.
func TokenOwner(token []byte, account string) string { return tokenOwner(account, tokenUserID(token)) }
