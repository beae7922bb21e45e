package messages

import (
	"testing"
	"time"
)

func TestCursor(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 22, 14, 3, 5, 123456000, time.UTC)
	for _, p := range []position{{id: 1}, {id: 42}, {id: 1 << 60}, {id: 7, at: at, timed: true}} {
		got, ok := decodeCursor(encodeCursor(p))
		if !ok || got != p {
			t.Fatalf("cursor of %+v decodes to %+v %v", p, got, ok)
		}
	}
	for _, bad := range []string{"", "x", "bXNnOg", "bXNnOi0x", "aWQ6MQ", "bXNndDox", "bXNndDp4OjE"} {
		if _, ok := decodeCursor(bad); ok {
			t.Errorf("cursor %q accepted", bad)
		}
	}
}
