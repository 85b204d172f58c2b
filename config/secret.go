package config

import (
	"bytes"
	"errors"
	"fmt"
	"os"

	"agentgw/internal/secretfile"
)

// maxSecretBytes bounds a secret file.
const maxSecretBytes = 4096

func readSecret(path string) ([]byte, error) {
	return readSecretWith(path, secretfile.Read)
}

// readComponentSecret reads component.secret_file, which the XMPP server's
// group may also read (secretfile.ReadShared): Prosody reads the secret
// from this file, as `agentgw init` and docs/deploy.md set it up.
func readComponentSecret(path string) ([]byte, error) {
	return readSecretWith(path, secretfile.ReadShared)
}

func readSecretWith(path string, read func(string, int) ([]byte, error)) ([]byte, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("cannot read: %w", errors.Unwrap(err))
	}
	if info.Size() > maxSecretBytes {
		return nil, fmt.Errorf("larger than %d bytes", maxSecretBytes)
	}
	// A secret that group or others can read or write is refused, naming the
	// file and its mode (internal/secretfile).
	b, err := read(path, maxSecretBytes)
	if errors.Is(err, secretfile.ErrExposed) {
		return nil, err
	}
	if err != nil {
		return nil, fmt.Errorf("cannot read: %w", errors.Unwrap(err))
	}
	// The secret is the first line; anything after it is an error, not
	// silently part of the secret (which would fail the handshake as
	// not-authorized, fatally and without a hint).
	first, rest, _ := bytes.Cut(b, []byte("\n"))
	first = bytes.TrimRight(first, "\r")
	if len(bytes.TrimSpace(rest)) > 0 {
		return nil, errors.New("must hold the secret on its first and only line")
	}
	if len(first) == 0 {
		return nil, errors.New("file is empty")
	}
	return first, nil
}
