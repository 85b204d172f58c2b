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
// write; sharedBits those of a secret the XMPP server must read too (see
// ReadShared): group read is allowed there, and nothing else.
const (
	exposedBits fs.FileMode = 0o066
	sharedBits  fs.FileMode = 0o026
)

// Check refuses path if group or others can read or write it. The error names the
// file and its mode, never its content.
func Check(path string) error {
	info, err := os.Stat(path)
	if err != nil {
		return err
	}
	return checkMode(path, info, exposedBits)
}

func checkMode(path string, info fs.FileInfo, bits fs.FileMode) error {
	if m := info.Mode().Perm(); m&bits != 0 {
		fix := "chmod 600 it"
		if bits == sharedBits {
			fix = "chmod 600 it, or 640 with the XMPP server's group"
		}
		return fmt.Errorf("%s is %w (mode %04o); %s", path, ErrExposed, m, fix)
	}
	return nil
}

// Read opens path, checks its mode on the open file (so the file checked
// is the file read) and returns at most max bytes of it; a larger file is
// an error.
func Read(path string, max int) ([]byte, error) {
	return read(path, max, exposedBits)
}

// ReadShared is Read for the one secret agentgw shares with the XMPP
// server, the XEP-0114 component secret: the server (Prosody reads it from
// agentgw's file through its Lua configuration) runs as another user, so
// the file may be readable by its group (chgrp prosody, chmod 0640). Any
// other access by group or others is still refused.
func ReadShared(path string, max int) ([]byte, error) {
	return read(path, max, sharedBits)
}

func read(path string, max int, bits fs.FileMode) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if err := checkMode(path, info, bits); err != nil {
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
