// Package secretfile reads the files that hold secrets (the component
// secret, MCP env and header values, client passwords, the MCP face's
// account passwords and bearer tokens) and refuses any that group or
// others can read or write: a secret that other local users could read is
// already disclosed, and one they could write they could replace (a bearer
// token of their own would let them in). The operator should hear about
// it before the gateway uses it. This is agentgw's one secret-file rule.
package secretfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// ErrExposed is wrapped by the error of a file that group or others can
// read or write.
var ErrExposed = errors.New("readable or writable by group or others")

// exposedBits are the permission bits that let group or others read or
// write.
const exposedBits fs.FileMode = 0o066

// Check refuses path if group or others can read or write it. The error names the
// file and its mode, never its content.
func Check(path string) error {
	info, err := os.Stat(path)
	if err != nil {
		return err
	}
	return checkMode(path, info)
}

func checkMode(path string, info fs.FileInfo) error {
	if m := info.Mode().Perm(); m&exposedBits != 0 {
		return fmt.Errorf("%s is %w (mode %04o); chmod 600 it", path, ErrExposed, m)
	}
	return nil
}

// Read opens path, checks its mode on the open file (so the file checked
// is the file read) and returns at most max bytes of it; a larger file is
// an error.
func Read(path string, max int) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if err := checkMode(path, info); err != nil {
		return nil, err
	}
	b, err := io.ReadAll(io.LimitReader(f, int64(max)+1))
	if err != nil {
		return nil, err
	}
	if len(b) > max {
		return nil, fmt.Errorf("%s is larger than %d bytes", path, max)
	}
	return b, nil
}
