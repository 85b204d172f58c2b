package task_test

import (
	"strings"
	"testing"
	"time"

	"agentgw/task"
)

func TestParseDateTime(t *testing.T) {
	for _, tc := range []struct {
		in, canon string
	}{
		{"2026-07-27T19:15:00Z", "2026-07-27T19:15:00Z"},
		{" 2026-07-27T19:15:00Z\n", "2026-07-27T19:15:00Z"},
		{"2026-07-27T21:15:00+02:00", "2026-07-27T19:15:00Z"},
		{"2026-07-27T19:15:00-00:30", "2026-07-27T19:45:00Z"},
		{"2026-07-27T19:15:00.000Z", "2026-07-27T19:15:00Z"},
		{"2026-07-27T19:15:00.5Z", "2026-07-27T19:15:00.5Z"},
		{"2026-07-27T19:15:00.123456789Z", "2026-07-27T19:15:00.123456789Z"},
		{"2026-07-27T19:15:00.1234567891Z", "2026-07-27T19:15:00.1234567891Z"},
		{"2026-07-27T19:15:00.12345678900000000001Z", "2026-07-27T19:15:00.12345678900000000001Z"},
		{"2026-07-27T19:15:00.1000000000000Z", "2026-07-27T19:15:00.1Z"},
		{"2024-02-29T00:00:00Z", "2024-02-29T00:00:00Z"},
		{"2026-01-01T00:30:00+14:00", "2025-12-31T10:30:00Z"},
		{"9999-12-31T23:59:59Z", "9999-12-31T23:59:59Z"},
	} {
		in, err := task.ParseDateTime(tc.in)
		if err != nil {
			t.Errorf("%q: %v", tc.in, err)
			continue
		}
		if got := in.String(); got != tc.canon {
			t.Errorf("%q: canonical %q, want %q", tc.in, got, tc.canon)
		}
	}
	for _, bad := range []string{
		"", "2026-07-27", "2026-07-27T19:15:00", "2026-07-27 19:15:00Z", "2026-07-27t19:15:00Z",
		"2026-07-27T19:15:00z", "2026-07-27T19:15Z", "2026-07-27T19:15:00.Z", "2026-07-27T19:15:00,5Z",
		"2026-13-01T00:00:00Z", "2026-02-29T00:00:00Z", "2026-04-31T00:00:00Z", "2026-07-27T24:00:00Z",
		"2026-07-27T19:60:00Z", "2026-07-27T19:15:60Z", "0000-01-01T00:00:00Z", "+2026-07-27T19:15:00Z",
		"2026-07-27T19:15:00+1:00", "2026-07-27T19:15:00+14:30", "2026-07-27T19:15:00+02:60",
		"2026-07-27T19:15:00+0200", "2026-07-27T19:15:00ZZ",
		"12026-07-27T19:15:00Z", "0001-01-01T00:00:00+01:00", "2026-07-27T19:15:00." + strings.Repeat("1", 120) + "Z",
	} {
		if _, err := task.ParseDateTime(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// TestInstantExact checks that comparisons apply the offset and keep every
// fractional digit, including digits beyond the nanosecond.
func TestInstantExact(t *testing.T) {
	at := func(s string) task.Instant {
		in, err := task.ParseDateTime(s)
		if err != nil {
			t.Fatal(err)
		}
		return in
	}
	base := time.Date(2026, 7, 27, 19, 15, 0, 0, time.UTC)
	for _, tc := range []struct {
		deadline string
		now      time.Time
		reached  bool
	}{
		{"2026-07-27T19:15:00Z", base.Add(-time.Nanosecond), false},
		{"2026-07-27T19:15:00Z", base, true},
		{"2026-07-27T21:15:00+02:00", base, true},
		{"2026-07-27T21:15:00+02:00", base.Add(-time.Nanosecond), false},
		{"2026-07-27T19:15:00.5Z", base.Add(499 * time.Millisecond), false},
		{"2026-07-27T19:15:00.5Z", base.Add(500 * time.Millisecond), true},
		{"2026-07-27T19:15:00.000000001Z", base, false},
		{"2026-07-27T19:15:00.000000001Z", base.Add(time.Nanosecond), true},
		// 0.1 ns after the second: a nanosecond clock reaches it only
		// at the next nanosecond.
		{"2026-07-27T19:15:00.0000000001Z", base, false},
		{"2026-07-27T19:15:00.0000000001Z", base.Add(time.Nanosecond), true},
		{"2026-07-27T19:15:00.0000000000Z", base, true},
	} {
		if got := at(tc.deadline).Reached(tc.now); got != tc.reached {
			t.Errorf("%s reached at %s = %v, want %v", tc.deadline, tc.now.Format(time.RFC3339Nano), got, tc.reached)
		}
	}
	if task.InstantOf(base).String() != "2026-07-27T19:15:00Z" || !task.InstantOf(time.Time{}).IsZero() {
		t.Error("InstantOf")
	}
	if got := task.FormatDateTime(base.Add(1500 * time.Microsecond)); got != "2026-07-27T19:15:00.0015Z" {
		t.Errorf("FormatDateTime = %s", got)
	}
}
