package api

// ForgetParsed empties the cache of parsed manifests, as its eviction of
// a busy gateway would: tests use it to reach the paths a cache miss takes.
func ForgetParsed() {
	c := parsedManifests
	c.mu.Lock()
	defer c.mu.Unlock()
	c.order.Init()
	clear(c.byHash)
	c.bytes = 0
}
