package task

import (
	"errors"
	"strings"
	"time"
)

// maxDateTimeLen bounds an XEP-0082 DateTime: 25 characters plus at most
// 100 fractional digits.
const maxDateTimeLen = 126

// errDateTime is the error of ParseDateTime; its text names the rule only.
var errDateTime = errors.New("task: not an XEP-0082 DateTime (CCYY-MM-DDThh:mm:ss[.s+](Z|±hh:mm))")

// Instant is an XEP-0082 DateTime kept exactly: the ProtoXEP requires
// deadline and expiry comparisons to apply the time-zone offset and keep
// every supplied fractional digit ("Cancellation and Deadlines"). Go times
// hold nanoseconds, so any digits beyond the ninth are kept separately.
// The zero Instant is "none".
type Instant struct {
	floor time.Time // UTC, the instant truncated to the nanosecond
	sub   string    // fractional digits beyond the ninth, trailing zeros trimmed
}

// ParseDateTime parses an XEP-0082 DateTime: CCYY-MM-DDThh:mm:ss, an
// optional fraction of one or more digits, and Z or a ±hh:mm offset of at
// most 14:00. Leading and trailing XML whitespace is ignored, as for
// xs:dateTime. Years 0001 to 9999 (in UTC) are accepted, except the very
// first instant, 0001-01-01T00:00:00Z, which is the zero Instant ("none");
// leap seconds are not.
func ParseDateTime(s string) (Instant, error) {
	s = strings.Trim(s, " \t\r\n")
	if len(s) < len("2006-01-02T15:04:05Z") || len(s) > maxDateTimeLen {
		return Instant{}, errDateTime
	}
	num := func(i, n int) (int, bool) {
		v := 0
		for _, c := range []byte(s[i : i+n]) {
			if c < '0' || c > '9' {
				return 0, false
			}
			v = v*10 + int(c-'0')
		}
		return v, true
	}
	year, ok1 := num(0, 4)
	month, ok2 := num(5, 2)
	day, ok3 := num(8, 2)
	hour, ok4 := num(11, 2)
	minute, ok5 := num(14, 2)
	sec, ok6 := num(17, 2)
	if !(ok1 && ok2 && ok3 && ok4 && ok5 && ok6) ||
		s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' || s[16] != ':' {
		return Instant{}, errDateTime
	}
	rest := s[19:]
	var frac string
	if strings.HasPrefix(rest, ".") {
		n := 1
		for n < len(rest) && rest[n] >= '0' && rest[n] <= '9' {
			n++
		}
		if n == 1 {
			return Instant{}, errDateTime
		}
		frac, rest = rest[1:n], rest[n:]
	}
	offset := 0
	switch {
	case rest == "Z":
	case len(rest) == 6 && (rest[0] == '+' || rest[0] == '-') && rest[3] == ':':
		oh, ok1 := num(len(s)-5, 2)
		om, ok2 := num(len(s)-2, 2)
		if !ok1 || !ok2 || om > 59 || oh > 14 || oh == 14 && om != 0 {
			return Instant{}, errDateTime
		}
		offset = oh*3600 + om*60
		if rest[0] == '-' {
			offset = -offset
		}
	default:
		return Instant{}, errDateTime
	}
	if year < 1 || month < 1 || month > 12 || day < 1 || hour > 23 || minute > 59 || sec > 59 {
		return Instant{}, errDateTime
	}
	ns := 0
	for i := 0; i < 9; i++ {
		ns *= 10
		if i < len(frac) {
			ns += int(frac[i] - '0')
		}
	}
	sub := ""
	if len(frac) > 9 {
		sub = strings.TrimRight(frac[9:], "0")
	}
	local := time.Date(year, time.Month(month), day, hour, minute, sec, ns, time.FixedZone("", offset))
	if local.Day() != day { // February 30 and the like normalize into March
		return Instant{}, errDateTime
	}
	utc := local.UTC()
	if utc.Year() < 1 || utc.Year() > 9999 {
		return Instant{}, errDateTime
	}
	if utc.IsZero() && sub == "" {
		// 0001-01-01T00:00:00Z would be the zero Instant, which means
		// "none": a deadline that long past would silently vanish.
		return Instant{}, errDateTime
	}
	return Instant{floor: utc, sub: sub}, nil
}

// InstantOf returns the Instant of t.
func InstantOf(t time.Time) Instant {
	if t.IsZero() {
		return Instant{}
	}
	return Instant{floor: t.UTC()}
}

// IsZero reports whether i is the zero Instant.
func (i Instant) IsZero() bool { return i.floor.IsZero() && i.sub == "" }

// Time returns the earliest nanosecond instant not before i: i itself
// when it has at most nine fractional digits, else i rounded up. For any
// now with nanosecond resolution, now has reached i exactly when
// !now.Before(i.Time()).
func (i Instant) Time() time.Time {
	if i.sub != "" {
		return i.floor.Add(time.Nanosecond)
	}
	return i.floor
}

// Reached reports whether now is at or after i, comparing exactly.
func (i Instant) Reached(now time.Time) bool {
	return !now.Before(i.Time())
}

// String returns the canonical form: UTC, "Z", and every significant
// fractional digit. Two Instants are the same point in time exactly when
// their canonical forms are equal.
func (i Instant) String() string {
	if i.IsZero() {
		return ""
	}
	s := i.floor.Format("2006-01-02T15:04:05.000000000")
	s += i.sub
	s = strings.TrimRight(s, "0")
	s = strings.TrimSuffix(s, ".")
	return s + "Z"
}

// FormatDateTime formats t as an XEP-0082 DateTime in UTC with as many
// fractional digits as it needs (none for whole seconds).
func FormatDateTime(t time.Time) string {
	return InstantOf(t).String()
}
