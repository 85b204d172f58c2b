package cli

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"agentgw/app"
	"agentgw/cli/cmdline"
)

// registerOutcome is what happened to one manifest file of a bulk
// registration.
type registerOutcome struct {
	file       string
	registered bool  // a new version was stored
	err        error // refused, and why; nil otherwise
}

// errRefused is the error of a bulk registration that refused some files;
// the summary has already named them.
type errRefused struct{ refused, total int }

func (e errRefused) Error() string {
	return fmt.Sprintf("endpoint register: %d of %d manifests refused", e.refused, e.total)
}

// registerAll registers the manifests named by args: files, and
// directories standing for the *.json files under them. One file argument
// keeps the historic output (a line per registration and activation). More files get
// a progress line on a terminal (stderr) and a summary on stdout:
// registered, unchanged, refused with each file and its reason. A bad file
// never stops the rest; the run fails if any was refused. Registration is
// idempotent: identical content again is "unchanged".
func registerAll(ctx context.Context, adm *app.Admin, args []string, activate bool, stdout, stderr io.Writer) error {
	files, outcomes := expandManifests(args)
	if len(args) == 1 && len(files) == 1 && files[0] == args[0] {
		_, err := register(ctx, adm, files[0], activate, stdout)
		return err
	}
	progress := writerIsTerminal(stderr)
	total := len(files) + len(outcomes)
	for i, f := range files {
		if err := ctx.Err(); err != nil {
			return err
		}
		if progress {
			fmt.Fprintf(stderr, "\r\033[K[%d/%d] %s", i+1, len(files), f)
		}
		created, err := register(ctx, adm, f, activate, io.Discard)
		outcomes = append(outcomes, registerOutcome{file: f, registered: created, err: err})
	}
	if progress {
		fmt.Fprint(stderr, "\r\033[K")
	}
	var registered, unchanged int
	var refused []registerOutcome
	for _, o := range outcomes {
		switch {
		case o.err != nil:
			refused = append(refused, o)
		case o.registered:
			registered++
		default:
			unchanged++
		}
	}
	word := ""
	if activate {
		word = " (each activated)"
	}
	fmt.Fprintf(stdout, "registered %d, unchanged %d, refused %d%s\n", registered, unchanged, len(refused), word)
	for _, o := range refused {
		fmt.Fprintf(stdout, "refused %s: %s\n", o.file, strings.TrimPrefix(o.err.Error(), o.file+": "))
	}
	if len(refused) > 0 {
		return errRefused{len(refused), total}
	}
	return nil
}

// expandManifests turns arguments into manifest files: a file as given, a
// directory into the *.json files under it, sorted. Arguments that cannot
// be read, and directories without manifests, come back as refusals.
func expandManifests(args []string) (files []string, refused []registerOutcome) {
	for _, a := range args {
		info, err := os.Stat(a)
		if err != nil {
			refused = append(refused, registerOutcome{file: a, err: err})
			continue
		}
		if !info.IsDir() {
			files = append(files, a)
			continue
		}
		var found []string
		err = filepath.WalkDir(a, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !d.IsDir() && strings.HasSuffix(d.Name(), ".json") {
				found = append(found, p)
			}
			return nil
		})
		switch {
		case err != nil:
			refused = append(refused, registerOutcome{file: a, err: err})
		case len(found) == 0:
			refused = append(refused, registerOutcome{file: a, err: fmt.Errorf("%s: no *.json manifests in this directory", a)})
		default:
			slices.Sort(found)
			files = append(files, found...)
		}
	}
	return files, refused
}

// writerIsTerminal reports whether w is a terminal (isTerminal).
func writerIsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && cmdline.IsTerminal(f)
}
