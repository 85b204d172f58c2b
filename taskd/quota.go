package taskd

import (
	"agentgw/db"
	"agentgw/task"
)

// checkQuota refuses a new admission by caller with
// <resource-constraint/> once the caller's settled tasks kept, or the
// bytes its tasks keep (arguments, inputs, events, results), have reached
// Options.MaxFinishedPerCaller or MaxBytesPerCaller. It runs in the
// admission's commit and reads one row of counters the store keeps
// (db.CallerUsage), whatever the caller's history, so the quota is exact:
// admissions committed before it in the same batch count. Nothing stored
// is touched; the caller's tasks free their share as they are purged
// after retention.
func (s *Service) checkQuota(tx *db.TaskTx, caller string) error {
	if s.opts.FinishedTasksPerCaller <= 0 && s.opts.StoredBytesPerCaller <= 0 {
		return nil
	}
	u, err := tx.CallerUsage(caller)
	if err != nil {
		return err
	}
	if s.opts.FinishedTasksPerCaller > 0 && u.Finished >= s.opts.FinishedTasksPerCaller ||
		s.opts.StoredBytesPerCaller > 0 && u.Bytes >= s.opts.StoredBytesPerCaller {
		return task.ErrResourceConstraint
	}
	return nil
}
