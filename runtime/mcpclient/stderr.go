package mcpclient

// stderrTail is how much of the end of a stdio server's standard error is
// kept for the operator.
const stderrTail = 4 << 10
