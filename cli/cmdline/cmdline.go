// Package cmdline holds what every agentgw command line shares: the
// usage errors that Main turns into exit code 2, and the flag parser that
// takes flags before, between or after the positional arguments. It is
// used by cli and by the commands in packages of their own (cli/client).
package cmdline

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"agentgw/internal/secretfile"
)

// LoginTimeout bounds each login of a command as an XMPP account, first
// or after a lost session.
const LoginTimeout = 30 * time.Second

// ErrUsage marks a usage error: exit code 2 and the usage text.
var ErrUsage = errors.New("usage")

// ErrBadArg marks a usage error whose message is clear on its own, such
// as an argument that is no JSON or no JID: exit code 2, the message, and
// no usage text.
var ErrBadArg = errors.New("bad argument")

// Parse parses flags that may stand before, between or after the
// positional arguments, and checks the positional count.
func Parse(fs *flag.FlagSet, args []string, minPos, maxPos int) ([]string, error) {
	fs.SetOutput(io.Discard)
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrUsage, fs.Name(), err)
		}
		args = fs.Args()
		if len(args) == 0 {
			break
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
	if len(pos) < minPos || len(pos) > maxPos {
		return nil, fmt.Errorf("%w: %s: wrong number of arguments", ErrUsage, fs.Name())
	}
	return pos, nil
}

// ReadPassword takes the password from a file or from AGENTGW_PASSWORD;
// never from the command line, where other users could read it.
func ReadPassword(file string) (string, error) {
	if file != "" {
		// A password file that group or others can read or write is refused.
		b, err := secretfile.Read(file, 4096)
		if err != nil {
			return "", fmt.Errorf("client: password file: %w", err)
		}
		pw, _, _ := strings.Cut(string(b), "\n")
		return strings.TrimRight(pw, "\r"), nil
	}
	if pw := os.Getenv("AGENTGW_PASSWORD"); pw != "" {
		return pw, nil
	}
	return "", errors.New("client: no password: use -password-file or set AGENTGW_PASSWORD")
}

// IsTerminal reports whether f looks like a terminal: a character device
// other than the null device (what a detached or scripted run has).
func IsTerminal(f *os.File) bool {
	st, err := f.Stat()
	if err != nil || st.Mode()&os.ModeCharDevice == 0 {
		return false
	}
	null, err := os.Stat(os.DevNull)
	return err != nil || !os.SameFile(st, null)
}
