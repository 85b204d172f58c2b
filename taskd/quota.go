package taskd

import (
	"context"

	"agentgw/task"
)

// checkQuota refuses a new admission by caller with
// <resource-constraint/> once the caller's settled tasks kept, or the
// bytes its tasks keep (arguments, inputs, events, results), have reached
// Options.MaxFinishedPerCaller or MaxBytesPerCaller. It is read from the
// reader pool before the commit, so concurrent admissions of one caller
// may pass it together: the quota can be exceeded by the admissions in
// flight, never more. Nothing stored is touched; the caller's tasks free
// their share as they are purged after retention.
func (s *Service) checkQuota(ctx context.Context, caller string) error {
	if s.opts.MaxFinishedPerCaller <= 0 && s.opts.MaxBytesPerCaller <= 0 {
		return nil
	}
	u, err := s.store.CallerUsage(ctx, caller)
	if err != nil {
		return err
	}
	if s.opts.MaxFinishedPerCaller > 0 && u.Finished >= s.opts.MaxFinishedPerCaller ||
		s.opts.MaxBytesPerCaller > 0 && u.Bytes >= s.opts.MaxBytesPerCaller {
		return task.ErrResourceConstraint
	}
	return nil
}
