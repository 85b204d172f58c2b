package config

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
)

// The modes of [runtime] sandbox (package runtime/sandbox, docs/deploy.md).
const (
	// SandboxRequired refuses to start without Landlock (ABI 6 or later,
	// for the signal and abstract socket scopes).
	SandboxRequired = "required"
	// SandboxBestEffort, the default, confines every runtime child with
	// what the kernel has, and runs it unconfined, saying so, where the
	// kernel has no Landlock.
	SandboxBestEffort = "best-effort"
	// SandboxOff starts runtime children directly, unconfined.
	SandboxOff = "off"
)

// Defaults of the sandbox_* keys of [[endpoint]] (docs/limits.md). A key
// set to -1 lifts its limit.
const (
	// DefaultSandboxCPUSeconds bounds the processor time of one exec tool
	// run or chat program run; a stdio MCP server, which lives as long as
	// the gateway, has no default bound.
	DefaultSandboxCPUSeconds = 3600
	// DefaultSandboxMemoryMB bounds the data segment of a child, in MiB.
	DefaultSandboxMemoryMB = 2048
	// DefaultSandboxOpenFiles bounds the open files of a child.
	DefaultSandboxOpenFiles = 1024
	// DefaultSandboxProcesses bounds the processes of the gateway's user
	// as a child sees them (RLIMIT_NPROC counts them all).
	DefaultSandboxProcesses = 4096
)

var sandboxModes = []string{SandboxRequired, SandboxBestEffort, SandboxOff}

// RuntimeFile is the [runtime] table: what applies to every runtime
// child.
type RuntimeFile struct {
	Sandbox string `toml:"sandbox"`
}

func runtimeDefaults() RuntimeFile { return RuntimeFile{Sandbox: SandboxBestEffort} }

func (r RuntimeFile) build(p *problems) string {
	if !slices.Contains(sandboxModes, r.Sandbox) {
		p.bad("runtime.sandbox", "must be one of %q, %q or %q", SandboxRequired, SandboxBestEffort, SandboxOff)
	}
	return r.Sandbox
}

// EndpointSandboxFile holds the sandbox keys of an [[endpoint]] (embedded
// in EndpointFile). Zero limits take the defaults above.
type EndpointSandboxFile struct {
	SandboxRead       []string `toml:"sandbox_read"`
	SandboxWrite      []string `toml:"sandbox_write"`
	SandboxNetwork    *bool    `toml:"sandbox_network"`
	SandboxCPUSeconds int64    `toml:"sandbox_cpu_seconds"`
	SandboxMemoryMB   int64    `toml:"sandbox_memory_mb"`
	SandboxOpenFiles  int64    `toml:"sandbox_open_files"`
	SandboxProcesses  int64    `toml:"sandbox_processes"`
}

func (s EndpointSandboxFile) set() bool {
	return s.SandboxRead != nil || s.SandboxWrite != nil || s.SandboxNetwork != nil ||
		s.SandboxCPUSeconds != 0 || s.SandboxMemoryMB != 0 || s.SandboxOpenFiles != 0 || s.SandboxProcesses != 0
}

// EndpointSandbox is the validated sandbox of an endpoint's children.
// Paths are absolute and clean; a zero limit is none.
type EndpointSandbox struct {
	// Read and Write are granted besides the system and the work
	// directory (sandbox_read, sandbox_write).
	Read, Write []string
	// Network allows TCP (sandbox_network, default true).
	Network bool
	// CPUSeconds (zero: none for a stdio MCP server, and
	// DefaultSandboxCPUSeconds for the others unless lifted), MemoryBytes,
	// OpenFiles and Processes are the resource limits.
	CPUSeconds  uint64
	CPUDefault  bool
	MemoryBytes uint64
	OpenFiles   uint64
	Processes   uint64
}

// sandboxEndpoint validates the sandbox keys: they apply to an endpoint
// that starts children (runtime "exec", "mcp" with a command, or
// chat = "exec").
func sandboxEndpoint(key, dir string, in EndpointFile, out *Endpoint, p *problems) {
	s := in.EndpointSandboxFile
	children := in.Runtime == RuntimeExec || in.Runtime == RuntimeMCP && len(in.Command) > 0 || in.Chat == ChatExec
	if s.set() && !children {
		p.bad(key+".sandbox_read", "sandbox keys are only for an endpoint that runs a program (runtime \"exec\", runtime \"mcp\" with command, or chat = \"exec\")")
		return
	}
	o := EndpointSandbox{Network: s.SandboxNetwork == nil || *s.SandboxNetwork}
	paths := func(name string, in []string) []string {
		var ps []string
		for i, path := range in {
			if path == "" || strings.ContainsRune(path, 0) {
				p.bad(fmt.Sprintf("%s.%s[%d]", key, name, i), "must be a path")
				continue
			}
			ps = append(ps, filepath.Clean(resolve(dir, path)))
		}
		return ps
	}
	o.Read = paths("sandbox_read", s.SandboxRead)
	o.Write = paths("sandbox_write", s.SandboxWrite)
	limit := func(name string, v, def, max int64, unit int64) uint64 {
		switch {
		case v == 0:
			return uint64(def * unit)
		case v == -1:
			return 0
		case v < -1 || v > max:
			p.bad(key+"."+name, "must be between 1 and %d, or -1 for no limit", max)
			return 0
		}
		return uint64(v * unit)
	}
	o.CPUDefault = s.SandboxCPUSeconds == 0
	o.CPUSeconds = limit("sandbox_cpu_seconds", s.SandboxCPUSeconds, DefaultSandboxCPUSeconds, 1<<40, 1)
	o.MemoryBytes = limit("sandbox_memory_mb", s.SandboxMemoryMB, DefaultSandboxMemoryMB, 1<<30, 1<<20)
	o.OpenFiles = limit("sandbox_open_files", s.SandboxOpenFiles, DefaultSandboxOpenFiles, 1<<20, 1)
	o.Processes = limit("sandbox_processes", s.SandboxProcesses, DefaultSandboxProcesses, 1<<22, 1)
	out.Sandbox = o
}

// PrivatePaths lists what no runtime child may reach: the configuration
// file and its directory, the component secret, every token, password,
// env_files and header_files file, the database and its directory (the
// state directory, where the tools' work directories are), and the
// database of `agentgw mcp`. Paths are absolute; empty ones are left out.
func (c *Config) PrivatePaths() []string {
	var out []string
	add := func(ps ...string) {
		for _, p := range ps {
			if p != "" {
				if a, err := filepath.Abs(p); err == nil {
					out = append(out, a)
				}
			}
		}
	}
	if c.Path != "" {
		add(c.Path, filepath.Dir(c.Path))
	}
	add(c.SecretFile, c.DatabasePath)
	if c.DatabasePath != "" {
		add(filepath.Dir(c.DatabasePath))
	}
	for _, t := range c.Chat.Tokens {
		add(t.File)
	}
	for _, ep := range c.Endpoints {
		if ep.MCP == nil {
			continue
		}
		for _, f := range ep.MCP.EnvFiles {
			add(f)
		}
		for _, f := range ep.MCP.HeaderFiles {
			add(f)
		}
	}
	if m := c.MCP; m != nil {
		add(m.Database, m.TLSKey)
		for _, a := range m.Accounts {
			add(a.PasswordFile)
		}
		for _, t := range m.Tokens {
			add(t.File)
		}
	}
	return out
}
