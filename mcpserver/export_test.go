package mcpserver

// Elicitable is elicitable, for the tests.
var Elicitable = elicitable
