// Package cli is agentgw's command line: the subcommands that operators and
// scripts use, whose names and outputs are a contract. main.go only hands it
// the arguments, the standard streams and a context cancelled by SIGINT or
// SIGTERM, so end-to-end tests can run every command in-process.
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"agentgw/app"
	"agentgw/cli/client"
	"agentgw/cli/cmdline"
)

// Exit codes.
const (
	exitOK    = 0
	exitError = 1
	exitUsage = 2
)

const usage = `usage: agentgw COMMAND [flags] [args]

commands:
  serve -config FILE                      run the gateway
  init -domain DOMAIN [-server HOST:PORT] DIR
                                          write a starter config, secret and database; print the server snippets
  version                                 version, commit, Go version and build settings
  check-config -config FILE               validate a configuration file
  mcp -config FILE [-account JID] [-http ADDR]
                                          the XMPP MCP Server: MCP over stdio (or HTTP at ADDR/mcp) as an account
  backup -config FILE DEST                write a consistent copy of the database, also while serving
  store copy -config FILE TARGET          copy the store into an empty one: a SQLite path or a postgres:// URL
  store copy -mcp -config FILE TARGET     copy the state of agentgw mcp (mcp.database) into TARGET, whose mcp tables are empty
  check-blocking -config FILE -endpoint JID -account JID -password-file FILE [-server HOST:PORT]
                                          show that the account's server enforces XEP-0191 blocking of a chatting endpoint
  manifest hash [-config FILE] FILE.json  validate a manifest; print JID VERSION sha-256 HASH
  endpoint register -config FILE [-activate] FILE.json|DIR...
                                          register manifests (a DIR: its *.json); a summary ends a bulk run
  endpoint activate -config FILE JID VERSION
  endpoint deactivate -config FILE JID
  endpoint list -config FILE
  endpoint status -config FILE JID                  versions; tools an mcp import left out, and why
  endpoint sync -config FILE [-notes] JID           import an mcp endpoint's tool list now
  endpoint remove-version -config FILE JID VERSION  remove an inactive version (its tombstone stays)
  endpoint remove -config FILE JID                  deactivate and remove the endpoint and all versions
  client -jid JID [-password-file F] [-server HOST:PORT] [-json] [-trace FILE] SUBCOMMAND:
    discover [GATEWAY]                    find gateways and list the endpoints you may see
    search [-gateway JID] [TEXT]          XEP-0055 search of the agent directory
    describe ENDPOINT                     endpoint information
    tools ENDPOINT                        the tools of the active version
    call [-version V -hash B64 | -manifest FILE] [-request-id ID] [-deadline T]
         [-detach] [-wait D] [-poll D] ENDPOINT TOOL JSON
                                          pin, validate, invoke, follow events, print the result
    chat ENDPOINT TEXT                    send a chat message; print the answer, or that a queue endpoint took it
    state ENDPOINT TASK-ID                authoritative task state
    result ENDPOINT TASK-ID               terminal result
    cancel [-revision N] [-reason TEXT] ENDPOINT TASK-ID
    input [-revision N] ENDPOINT TASK-ID REQUEST-ID JSON
`

// errUsage and errBadArg are the usage errors of cmdline; app.ErrUsage,
// a usage error found in app (a flag's value), counts as errUsage.
var (
	errUsage  = cmdline.ErrUsage
	errBadArg = cmdline.ErrBadArg
)

// Main runs one command and returns the process exit code.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	err := run(ctx, args, stdout, stderr)
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, errBadArg):
		fmt.Fprintln(stderr, "agentgw:"+strings.TrimPrefix(strings.TrimPrefix(err.Error(), errBadArg.Error()), ":"))
		return exitUsage
	case errors.Is(err, errUsage) || errors.Is(err, app.ErrUsage):
		if msg := strings.TrimPrefix(err.Error(), errUsage.Error()); msg != "" {
			fmt.Fprintln(stderr, "agentgw:"+strings.TrimPrefix(msg, ":"))
		}
		fmt.Fprint(stderr, usage)
		return exitUsage
	default:
		fmt.Fprintln(stderr, "agentgw:", err)
		return exitError
	}
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return errUsage
	}
	cmd, rest := args[0], args[1:]
	switch cmd {
	case "serve":
		return serve(ctx, rest, stderr)
	case "check-config":
		return checkConfig(rest, stdout)
	case "backup":
		return backup(ctx, rest, stdout)
	case "check-blocking":
		return checkBlocking(ctx, rest, stdout)
	case "store":
		if len(rest) == 0 {
			return fmt.Errorf("%w: store needs a subcommand", errUsage)
		}
		return store(ctx, rest[0], rest[1:], stdout)
	case "manifest":
		if len(rest) == 0 || rest[0] != "hash" {
			return fmt.Errorf("%w: manifest takes the subcommand hash", errUsage)
		}
		return manifestHash(rest[1:], stdout)
	case "endpoint":
		if len(rest) == 0 {
			return fmt.Errorf("%w: endpoint needs a subcommand", errUsage)
		}
		return endpoint(ctx, rest[0], rest[1:], stdout, stderr)
	case "client":
		return client.Run(ctx, rest, stdout, stderr)
	case "init":
		return initDir(ctx, rest, stdout)
	case "version", "-version", "--version":
		return printVersion(stdout)
	case "mcp":
		return runMCP(ctx, rest, os.Stdin, stdout, stderr)
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, usage)
		return nil
	}
	return fmt.Errorf("%w: unknown command %q", errUsage, cmd)
}

// parse is cmdline.Parse.
func parse(fs *flag.FlagSet, args []string, minPos, maxPos int) ([]string, error) {
	return cmdline.Parse(fs, args, minPos, maxPos)
}

func requireConfig(name, path string) error {
	if path == "" {
		return fmt.Errorf("%w: %s: -config FILE is required", errUsage, name)
	}
	return nil
}
