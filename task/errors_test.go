package task_test

import (
	"errors"
	"fmt"
	"testing"

	"agentgw/surface"
	"agentgw/task"

	"mellium.im/xmpp/stanza"
)

// TestErrorsMatchByCondition: a task error matches the surface table's
// entry of its condition, wrapped or not, and no other; api and adhoc
// answer with the table's entries, so this is the match between task, api
// and surface.
func TestErrorsMatchByCondition(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want stanza.Error
	}{
		{task.ErrNotFound, surface.ErrItemNotFound},
		{task.ErrBadRequest, surface.ErrBadRequest},
		{task.ErrConflict, surface.ErrConflict},
		{task.ErrNotAcceptable, surface.ErrNotAcceptable},
		{task.ErrUnexpectedRequest, surface.ErrUnexpectedRequest},
		{task.ErrResourceConstraint, surface.ErrResourceConstraint},
		{task.ErrServiceUnavailable, surface.ErrServiceUnavailable},
		{task.ErrForbidden, surface.ErrForbidden},
	} {
		if !errors.Is(tc.err, tc.want) {
			t.Errorf("errors.Is(%v, surface %s) = false", tc.err, tc.want.Condition)
		}
		if !errors.Is(fmt.Errorf("admit: %w", tc.err), tc.want) {
			t.Errorf("wrapped %v does not match surface %s", tc.err, tc.want.Condition)
		}
		// Matching by condition alone, as mellium does for a target
		// without a type.
		if !errors.Is(tc.err, stanza.Error{Condition: tc.want.Condition}) {
			t.Errorf("%v does not match the bare condition", tc.err)
		}
		for _, other := range []stanza.Error{surface.ErrItemNotFound, surface.ErrConflict, surface.ErrInternalServerError} {
			if other.Condition != tc.want.Condition && errors.Is(tc.err, other) {
				t.Errorf("%v matches surface %s", tc.err, other.Condition)
			}
		}
		if !errors.Is(tc.err, &task.Error{Condition: tc.want.Condition, Text: "other text"}) {
			t.Errorf("%v does not match a task error of its condition", tc.err)
		}
	}
	if errors.Is(fmt.Errorf("lookup: %w", task.ErrNotFound), stanza.Error{Type: stanza.Modify, Condition: stanza.ItemNotFound}) {
		t.Error("item-not-found matched a target of another error type")
	}
}
