package client

import (
	"context"
	"io"
	"strings"
)

// Conn is the session interface of the client commands, exported for the
// tests, which connect the commands to a fake endpoint.
type Conn = conn

// ClientIO is what a client command reads and writes, for the tests.
type ClientIO struct {
	Stdout, Stderr io.Writer
	// Stdin is read when Interactive is set; nil is empty.
	Stdin       io.Reader
	Interactive bool
	// Dial replaces the login.
	Dial func(ctx context.Context) (Conn, error)
	// Self is the binary as invoked (os.Args[0] in the binary).
	Self string
}

// RunClient runs `agentgw client ARGS` with cio.
func RunClient(ctx context.Context, args []string, cio ClientIO) error {
	stdin := cio.Stdin
	if stdin == nil {
		stdin = strings.NewReader("")
	}
	return runClientIO(ctx, args, clientIO{
		stdout: cio.Stdout, stderr: cio.Stderr, stdin: stdin, interactive: cio.Interactive, self: cio.Self,
		dial: func(ctx context.Context) (conn, error) { return cio.Dial(ctx) },
	})
}
