package db

// QueueLen is the number of closures waiting for the group committer.
func QueueLen(c *GroupCommitter) int { return len(c.ops) }
