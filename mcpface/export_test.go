package mcpface

// Elicitable is elicitable, for the tests.
var Elicitable = elicitable

// TokenOwner is the owner of the MCP tasks of token acting as account.
func TokenOwner(token []byte, account string) string { return tokenOwner(account, tokenUserID(token)) }

// ContactChanged tells the account face that bare changed, as the
// account does, for the tests.
func (s *Server) ContactChanged(bare string) { s.face.ContactChanged(bare) }
