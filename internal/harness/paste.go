package harness

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
)

// AddEjabberdListeners inserts YAML list items into the listen: section of
// ejabberd's configuration, as an operator pastes them, then runs edit (if
// not nil) on the configuration file's path, e.g. a one-liner that fills in
// a secret, and restarts ejabberd with the result.
func (e *Env) AddEjabberdListeners(ctx context.Context, items string, edit func(configPath string) error) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	switch {
	case e.stopped:
		return errors.New("add ejabberd listeners: environment stopped")
	case e.ejabberd == nil:
		return errors.New("add ejabberd listeners: ejabberd is not running")
	}
	path := e.ejabberdPaths.config
	raw, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("ejabberd config: %w", err)
	}
	// The listen: list ends where the next top-level key starts.
	cfg, rest, ok := strings.Cut(string(raw), "\napi_permissions:")
	if !ok {
		return errors.New("ejabberd config: no api_permissions key after the listen list")
	}
	cfg = cfg + "\n" + strings.TrimRight(items, "\n") + "\napi_permissions:" + rest
	if err := writeFile(path, []byte(cfg), 0o600); err != nil {
		return err
	}
	if edit != nil {
		if err := edit(path); err != nil {
			return err
		}
	}
	if err := e.stopEjabberdLocked(); err != nil {
		return err
	}
	return e.startEjabberdLocked(ctx)
}
