package migrate

import "strings"

// Statements splits a migration file into its statements, each without its
// terminating semicolon, skipping empty ones. It knows what may hold a
// semicolon that ends nothing: -- and /* */ comments, '…' strings (E'…' with
// backslash escapes), "…" identifiers and $tag$…$tag$ bodies.
//
// On Citus a migration runs one statement at a time: Citus forwards some
// commands (CREATE INDEX on a distributed table) to the worker with the text
// of the whole query they came in, and a worker refuses several commands in
// one prepared statement ("cannot insert multiple commands into a prepared
// statement").
func Statements(sql string) []string {
	var (
		out   []string
		start int
	)
	emit := func(end int) {
		if s := strings.TrimSpace(sql[start:end]); s != "" && !onlyComments(s) {
			out = append(out, s)
		}
	}
	for i := 0; i < len(sql); i++ {
		switch c := sql[i]; {
		case c == '-' && strings.HasPrefix(sql[i:], "--"):
			i = skipTo(sql, i, "\n") - 1
		case c == '/' && strings.HasPrefix(sql[i:], "/*"):
			i = skipTo(sql, i+2, "*/") - 1
		case c == '\'':
			i = skipQuoted(sql, i, '\'', i > 0 && (sql[i-1] == 'E' || sql[i-1] == 'e'))
		case c == '"':
			i = skipQuoted(sql, i, '"', false)
		case c == '$':
			if tag, ok := dollarTag(sql[i:]); ok {
				i = skipTo(sql, i+len(tag), tag) - 1
			}
		case c == ';':
			emit(i)
			start = i + 1
		}
	}
	emit(len(sql))
	return out
}

// skipTo returns the index just past the first end at or after from (the
// text's length when there is none).
func skipTo(s string, from int, end string) int {
	if j := strings.Index(s[from:], end); j >= 0 {
		return from + j + len(end)
	}
	return len(s)
}

// skipQuoted returns the index of the quote closing the one at i (a doubled
// quote is one character; with backslashes, a backslash escapes the next).
func skipQuoted(s string, i int, q byte, backslashes bool) int {
	for j := i + 1; j < len(s); j++ {
		switch {
		case backslashes && s[j] == '\\':
			j++
		case s[j] == q && j+1 < len(s) && s[j+1] == q:
			j++
		case s[j] == q:
			return j
		}
	}
	return len(s)
}

// dollarTag returns the $tag$ s begins with, if any.
func dollarTag(s string) (string, bool) {
	for j := 1; j < len(s); j++ {
		c := s[j]
		switch {
		case c == '$':
			return s[:j+1], true
		case c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || j > 1 && c >= '0' && c <= '9':
		default:
			return "", false
		}
	}
	return "", false
}

// onlyComments reports whether s holds comments and nothing else.
func onlyComments(s string) bool {
	for _, line := range strings.Split(s, "\n") {
		if t := strings.TrimSpace(line); t != "" && !strings.HasPrefix(t, "--") {
			return false
		}
	}
	return true
}
