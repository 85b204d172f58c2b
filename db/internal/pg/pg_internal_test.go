package pg

import "testing"

func TestPgRewrite(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"SELECT a FROM t WHERE b = ? AND c = ?", "SELECT a FROM t WHERE b = $1 AND c = $2"},
		{"SELECT ?1, ?2, ?1", "SELECT $1, $2, $1"},
		{"SELECT '?' FROM t WHERE x = ?", "SELECT '?' FROM t WHERE x = $1"},
		{"SELECT s.value FROM json_each(?) AS s CROSS JOIN t ON t.jid = s.value WHERE instr(t.f, ?) > 0",
			"SELECT s.value FROM json_array_elements_text(CAST($1 AS text)::json) AS s JOIN t ON t.jid = s.value WHERE strpos(t.f, $2) > 0"},
		{"SELECT id FROM q ORDER BY seq DESC LIMIT -1 OFFSET ?", "SELECT id FROM q ORDER BY seq DESC LIMIT ALL OFFSET $1"},
		{"SELECT SUM(length(doc)) FROM task", "SELECT SUM(octet_length(doc)) FROM task"},
	} {
		if got := rewrite(c.in); got != c.want {
			t.Errorf("rewrite(%q)\n = %q\nwant %q", c.in, got, c.want)
		}
	}
}

func TestRedact(t *testing.T) {
	for in, want := range map[string]string{
		"postgres://u:pw@h:5432/d?sslmode=disable": "postgres://u:xxxxx@h:5432/d?sslmode=disable",
		"postgres://h/d?password=pw":               "postgres://h/d?password=xxxxx",
		"postgres://u@h/d":                         "postgres://u@h/d",
	} {
		if got := Redact(in); got != want {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
	}
}
