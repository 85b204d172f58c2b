package api

import (
	"container/list"
	"fmt"
	"sync"

	"agentgw/manifest"
	"agentgw/wire"
)

// Limits of this package. Registration also applies manifest.DefaultLimits:
//
//	Limit                          Value     Source
//	raw manifest                   1 MiB     manifest.DefaultMaxManifestBytes
//	canonical schema, each         256 KiB   manifest.DefaultMaxSchemaBytes
//	tools per manifest             1024      manifest.DefaultMaxTools
//	nesting depth                  64        manifest.DefaultMaxDepth
//	string, member name            64 KiB    manifest.DefaultMaxStringBytes
//	object members, array items    4096      manifest.DefaultMaxMembers
//	served manifest (XML-escaped)  256 KiB   MaxServedJSONBytes
//
// The gateway's read loop also refuses any IQ over 2 MiB of character data
// before routing it, whoever sends it and to whomever: that answer is the
// same for every target, so it discloses nothing.
const (
	// MaxServedJSONBytes bounds the canonical manifest as it goes on the
	// wire: its length once escaped (wire.EscapedLen, which counts '"' as
	// the &quot; a server writes for the next hop). A <manifest/> result is about this size, and each
	// <schema/> result smaller. Prosody's defaults accept 512 KiB stanzas
	// from a component and over s2s (component_stanza_size_limit,
	// s2s_stanza_size_limit); ejabberd's usual s2s max_stanza_size is
	// 512000. Registering over c2s is bounded earlier by the client's own
	// server (Prosody's c2s_stanza_size_limit is 256 KiB).
	MaxServedJSONBytes = 256 << 10

	// cacheMaxEntries and cacheMaxBytes bound the cache of parsed
	// manifests, by count and by the canonical bytes held.
	cacheMaxEntries = 256
	cacheMaxBytes   = 32 << 20
)

// CheckServable reports whether the gateway can serve m's canonical form in
// a <manifest/> result. Registration over XMPP and through the CLI both call
// it, so what is stored can always be served. The error is a
// *manifest.Error of kind KindTooLarge.
func CheckServable(m *manifest.Manifest) error {
	// wire.EscapedLen counts a quote as the six bytes of &quot;, not the
	// five Go's encoder writes: a server re-serializes it so for the next
	// hop, whose s2s limit this one must keep to too.
	if n := wire.EscapedLen(m.Canonical); n > MaxServedJSONBytes {
		return &manifest.Error{Kind: manifest.KindTooLarge,
			Msg: fmt.Sprintf("canonical manifest is %d bytes as XML text, limit is %d", n, MaxServedJSONBytes)}
	}
	return nil
}

// parsedManifests caches manifests parsed back from their stored canonical
// bytes, for tool listings, tool information and schemas. It is keyed by the
// SHA-256 of those bytes: the content determines the entry, so an entry can
// never be stale and may be shared by every Service in the process.
var parsedManifests = newManifestCache(cacheMaxEntries, cacheMaxBytes)

// manifestCache is a least-recently-used cache bounded by entries and bytes.
type manifestCache struct {
	mu         sync.Mutex
	maxEntries int
	maxBytes   int
	bytes      int
	order      *list.List // of *manifest.Manifest, most recent first
	byHash     map[[32]byte]*list.Element
}

func newManifestCache(maxEntries, maxBytes int) *manifestCache {
	return &manifestCache{
		maxEntries: maxEntries,
		maxBytes:   maxBytes,
		order:      list.New(),
		byHash:     map[[32]byte]*list.Element{},
	}
}

// lookup returns the cached manifest whose hash is hash, if any.
func (c *manifestCache) lookup(hash [32]byte) (*manifest.Manifest, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.byHash[hash]
	if !ok {
		return nil, false
	}
	c.order.MoveToFront(e)
	return e.Value.(*manifest.Manifest), true
}

// parse returns the manifest whose canonical bytes are canonical and whose
// hash is hash, parsing it on a miss. The stored bytes were validated at
// registration; if they no longer parse, or hash differently, the error is
// a local fault.
func (c *manifestCache) parse(canonical []byte, hash [32]byte) (*manifest.Manifest, error) {
	c.mu.Lock()
	if e, ok := c.byHash[hash]; ok {
		c.order.MoveToFront(e)
		m := e.Value.(*manifest.Manifest)
		c.mu.Unlock()
		return m, nil
	}
	c.mu.Unlock()

	// Parsing compiles every schema: do it outside the lock. Two misses on
	// one manifest may both parse; the second insertion is dropped.
	m, err := manifest.Parse(canonical, manifest.Options{})
	if err != nil {
		return nil, err
	}
	if m.Hash != hash {
		return nil, fmt.Errorf("canonical bytes do not hash to the stored hash")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.byHash[hash]; ok {
		return m, nil
	}
	c.byHash[hash] = c.order.PushFront(m)
	c.bytes += len(m.Canonical)
	for c.order.Len() > 1 && (c.order.Len() > c.maxEntries || c.bytes > c.maxBytes) {
		old := c.order.Remove(c.order.Back()).(*manifest.Manifest)
		delete(c.byHash, old.Hash)
		c.bytes -= len(old.Canonical)
	}
	return m, nil
}
