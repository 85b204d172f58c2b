package db

// QueueLen is the number of closures waiting for the group committer,
// besides the batch being committed.
func QueueLen(c *GroupCommitter) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.queue)
}
