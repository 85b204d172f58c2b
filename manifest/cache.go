package manifest

import (
	"crypto/sha256"
	"errors"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// NewCompiler returns agentgw's one jsonschema compiler setup: JSON Schema
// 2020-12 pinned (the library's default draft may change over time),
// $vocabulary asserted, and a loader that refuses every URL, because the
// library's default loader reads local files (a "$ref":"file:///etc/passwd"
// would be opened). Tool schemas get CompileValidator's loader on top;
// the normative schemas this program embeds (the manifest's, the task
// events') need nothing but the 2020-12 meta-schema, which the library
// embeds and never loads.
func NewCompiler() *jsonschema.Compiler {
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertVocabs()
	c.UseLoader(denyLoader{})
	return c
}

// denyLoader refuses every URL.
type denyLoader struct{}

func (denyLoader) Load(string) (any, error) {
	return nil, errors.New("manifest: loading of external schema resources is disabled")
}

// maxCachedSchemas and maxCachedSchemaBytes bound the process-wide cache of
// compiled tool schemas, in number and in canonical bytes: a compiled
// schema takes about 25 times its canonical size.
const (
	maxCachedSchemas     = 512
	maxCachedSchemaBytes = 2 << 20
)

// compiled is the process-wide cache behind CachedValidator.
var compiled = &validatorCache{m: make(map[cacheKey]*Validator)}

// CachedValidator returns the Validator of a canonical tool schema under
// the default Options (default limits and validation budget, no external
// $ref), compiled once per process: the cache is keyed by the schema's
// SHA-256 and whether it is an input schema, which must declare a root
// "type":"object". Parse with KeepValidators and the default Options
// fills it too, so a pinned schema compiled at admission is not compiled
// again to check a result. The cache is bounded; when full it is emptied,
// which costs recompilation, never correctness.
func CachedValidator(canonical []byte, input bool) (*Validator, error) {
	key := cacheKey{sha256.Sum256(canonical), input}
	if v, ok := compiled.get(key); ok {
		return v, nil
	}
	v, err := CompileValidator(canonical, input, Options{})
	if err != nil {
		return nil, err
	}
	compiled.put(key, v, len(canonical))
	return v, nil
}

// validatorCache holds compiled schemas by digest.
type validatorCache struct {
	mu    sync.Mutex
	m     map[cacheKey]*Validator
	bytes int // canonical bytes of the cached schemas
}

type cacheKey struct {
	sum   [32]byte
	input bool
}

func (c *validatorCache) get(k cacheKey) (*Validator, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.m[k]
	return v, ok
}

func (c *validatorCache) put(k cacheKey, v *Validator, size int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.m[k]; ok {
		return
	}
	if len(c.m) >= maxCachedSchemas || c.bytes+size > maxCachedSchemaBytes {
		clear(c.m)
		c.bytes = 0
	}
	c.m[k] = v
	c.bytes += size
}

// cacheable reports whether opts compile a schema as CachedValidator does:
// default limits and no external references.
func (opts Options) cacheable() bool {
	return opts.Limits.withDefaults() == DefaultLimits() && len(opts.AllowedRefs) == 0 && opts.LoadRef == nil
}
