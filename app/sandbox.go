package app

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"

	"agentgw/config"
	"agentgw/metrics"
	"agentgw/runtime/sandbox"
)

// SandboxPlan is how the runtime children of one gateway are confined
// (runtime.sandbox): the helper binary, the Landlock ABI in force, and the
// paths no child may reach. A nil plan starts children directly (mode
// off, and library callers that set none).
type SandboxPlan struct {
	// ABI is the Landlock ABI the kernel has; 0 runs children with the
	// limits and no_new_privs only.
	ABI int
	// Helper is the agentgw binary, which has the sandbox-exec
	// subcommand.
	Helper string
	// Protected are carved out of every grant (config.PrivatePaths).
	Protected []string
}

// ErrSandboxRequired is returned by PlanSandbox for runtime.sandbox =
// "required" on a kernel without Landlock ABI sandbox.MinRequiredABI.
var ErrSandboxRequired = errors.New("runtime.sandbox: \"required\", but the kernel's Landlock is missing or too old")

// PlanSandbox returns the plan of cfg's runtime.sandbox with the kernel's
// Landlock ABI abi (sandbox.ABI()), or nil for mode off. Mode required
// fails without ABI sandbox.MinRequiredABI. A sandbox_read or
// sandbox_write path inside one of the gateway's private paths is an
// error naming the key.
func PlanSandbox(cfg *config.Config, abi int) (*SandboxPlan, error) {
	if cfg.Sandbox == config.SandboxOff {
		return nil, nil
	}
	if cfg.Sandbox == config.SandboxRequired && abi < sandbox.MinRequiredABI {
		return nil, fmt.Errorf("%w (found ABI %d, need %d)", ErrSandboxRequired, abi, sandbox.MinRequiredABI)
	}
	helper, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("runtime.sandbox: the agentgw binary: %w", err)
	}
	p := &SandboxPlan{ABI: abi, Helper: helper}
	for _, path := range sandbox.Resolve(cfg.PrivatePaths()...) {
		// A configuration directly in a system directory (/etc/agentgw.toml)
		// protects the file, not the whole of /etc.
		if path == "/" || slices.Contains(sandbox.SystemRead, path) {
			continue
		}
		p.Protected = append(p.Protected, path)
	}
	for i, ep := range cfg.Endpoints {
		// A dir is written by the tool: it must hold nothing of the
		// gateway's, nor be inside it.
		if ep.Dir != "" {
			d := sandbox.Resolve(ep.Dir)[0]
			for _, prot := range p.Protected {
				if d == prot || isWithin(d, prot) || isWithin(prot, d) {
					return nil, fmt.Errorf("endpoint[%d].dir: %s holds the gateway's configuration, secrets or state", i, ep.Dir)
				}
			}
		}
		for key, paths := range map[string][]string{"sandbox_read": ep.Sandbox.Read, "sandbox_write": ep.Sandbox.Write} {
			for k, path := range sandbox.Resolve(paths...) {
				for _, prot := range p.Protected {
					if path == prot || isWithin(path, prot) || isWithin(prot, path) && key == "sandbox_write" {
						return nil, fmt.Errorf("endpoint[%d].%s[%d]: %s holds the gateway's configuration, secrets or state", i, key, k, paths[k])
					}
				}
			}
		}
	}
	return p, nil
}

func isWithin(path, dir string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !filepath.IsAbs(rel) && (len(rel) < 3 || rel[:3] != "../")
}

// Child returns the sandbox of one endpoint's children; nil for a nil
// plan. longLived marks a stdio MCP server, which has no default CPU
// bound (config.DefaultSandboxCPUSeconds is per run).
func (p *SandboxPlan) Child(ep config.Endpoint, longLived bool) *sandbox.Child {
	if p == nil {
		return nil
	}
	s := ep.Sandbox
	cpu := s.CPUSeconds
	if longLived && s.CPUDefault {
		cpu = 0
	}
	return &sandbox.Child{Helper: p.Helper, Rules: sandbox.Rules{
		Landlock:  p.ABI > 0,
		Read:      s.Read,
		Write:     s.Write,
		Network:   s.Network,
		Protected: p.Protected,
		Limits:    sandbox.Limits{CPUSeconds: cpu, MemoryBytes: s.MemoryBytes, OpenFiles: s.OpenFiles, Processes: s.Processes},
	}}
}

// announce says at start what confines the children, once, and sets the
// agentgw_sandbox_landlock_abi gauge: the ABI in force, 0 when children
// run without Landlock.
func (p *SandboxPlan) announce(mode string, children bool, log *slog.Logger) {
	abi := 0
	if p != nil {
		abi = p.ABI
	}
	metrics.SandboxABI.Set(func() map[string]float64 { return map[string]float64{"": float64(abi)} })
	switch {
	case !children:
	case p == nil:
		log.Warn("runtime children run unsandboxed: runtime.sandbox = \"off\"")
	case p.ABI == 0:
		log.Warn("runtime children run unsandboxed: the kernel has no Landlock (runtime.sandbox = \"best-effort\"); resource limits still apply")
	case p.ABI < sandbox.MinRequiredABI:
		log.Warn("runtime children are sandboxed without the signal and socket scopes: the kernel's Landlock ABI is too old", "landlock_abi", p.ABI, "mode", mode)
	default:
		log.Info("runtime children are sandboxed", "landlock_abi", p.ABI, "mode", mode)
	}
}

// hasChildren reports whether cfg starts runtime children at all.
func hasChildren(cfg *config.Config) bool {
	for _, ep := range cfg.Endpoints {
		if ep.Runtime == config.RuntimeExec || ep.Runtime == config.RuntimeMCP && len(ep.Command) > 0 || ep.Chat == config.ChatExec {
			return true
		}
	}
	return false
}
