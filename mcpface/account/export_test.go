package account

import "context"

// Queue stores m as the account's writer does and wakes the WaitForMessage
// calls in progress, for the tests.
func (a *Account) Queue(ctx context.Context, m MessageResponse) {
	a.commit(ctx, []ingestItem{{m: m}})
}
