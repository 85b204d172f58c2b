package chat

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// TestSplitAnswers: a long answer goes out as several messages of at most
// MaxBody bytes, split at a line break near the bound or at a rune
// boundary, with nothing lost; past maxAnswers messages the last ends
// with CutMark. A 200 KB message's echo (issue 30) lost its last line
// with no mark before.
func TestSplitAnswers(t *testing.T) {
	line := strings.Repeat("é", 99) + "\n" // 199 bytes
	long := strings.Repeat(line, 200)      // 39,800 bytes: three messages
	parts := splitAnswers([]string{"short", long})
	if len(parts) != 4 || parts[0] != "short" || strings.Join(parts[1:], "") != long {
		t.Fatalf("%d parts; joined back equal: %v", len(parts), strings.Join(parts[1:], "") == long)
	}
	for i, p := range parts {
		if len(p) > MaxBody || !utf8.ValidString(p) {
			t.Errorf("part %d: %d bytes, valid UTF-8 %v", i, len(p), utf8.ValidString(p))
		}
		if i > 0 && i < len(parts)-1 && !strings.HasSuffix(p, "\n") {
			t.Errorf("part %d not split at a line break", i)
		}
	}

	huge := strings.Repeat("x", 200_000) // no line breaks
	parts = splitAnswers([]string{huge})
	if len(parts) != maxAnswers {
		t.Fatalf("%d parts, want %d", len(parts), maxAnswers)
	}
	last := parts[len(parts)-1]
	if !strings.HasSuffix(last, CutMark) || len(last) > MaxBody {
		t.Errorf("last part: %d bytes, ends with the mark %v", len(last), strings.HasSuffix(last, CutMark))
	}
	if got := strings.Join(parts, ""); !strings.HasPrefix(huge, strings.TrimSuffix(got, CutMark)) {
		t.Error("the parts are not the text's beginning")
	}

	// Many short texts: at most maxAnswers, and the cut is said.
	many := make([]string, maxAnswers+2)
	for i := range many {
		many[i] = "t"
	}
	if parts = splitAnswers(many); len(parts) != maxAnswers || !strings.HasSuffix(parts[maxAnswers-1], CutMark) {
		t.Errorf("many texts: %q", parts)
	}
	if parts = splitAnswers(many[:maxAnswers]); len(parts) != maxAnswers || strings.Contains(strings.Join(parts, ""), CutMark) {
		t.Errorf("exactly maxAnswers texts: %q", parts)
	}

	// SendChatMessage's one message is cut with the mark, within the bound.
	if c := clipMarked(huge); len(c) > MaxBody || !strings.HasSuffix(c, CutMark) {
		t.Errorf("clipMarked: %d bytes", len(c))
	}
	if c := clipMarked("fits"); c != "fits" {
		t.Errorf("clipMarked(fits) = %q", c)
	}
}
