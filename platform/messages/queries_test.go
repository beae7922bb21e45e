package messages_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/messages"
)

// TestColumnsFragment holds the fragment message_columns, which the named
// queries read message rows with, to Columns, whose order Row.ScanDest
// scans: the same columns in the same order.
func TestColumnsFragment(t *testing.T) {
	t.Parallel()
	f, err := messages.ColumnsFragment()
	if err != nil {
		t.Fatal(err)
	}
	var cols []string
	for _, line := range strings.Split(f.Text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "--") {
			continue
		}
		for _, c := range strings.Split(line, ",") {
			if c = strings.TrimSpace(c); c != "" {
				cols = append(cols, c)
			}
		}
	}
	if got, want := strings.Join(cols, ", "), messages.Columns; got != want {
		t.Fatalf("message_columns.sql lists\n  %s\nwant Columns\n  %s", got, want)
	}
}

// TestCountersCreate checks the counters' creation: one row per sender
// and day, in their order, each pair once, on the side asked for.
func TestCountersCreate(t *testing.T) {
	t.Parallel()
	c, err := messages.NewCounters()
	if err != nil {
		t.Fatal(err)
	}
	tn := db.Tenant{OrgID: 3, Schema: db.SchemaFor(3)}
	q, args, err := c.Create(tn, messages.SideDeliver, []int64{2, 1, 2}, []string{"2026-11-02", "2026-11-01", "2026-11-02"})
	if err != nil {
		t.Fatal(err)
	}
	if want := []any{int64(1), "2026-11-01", int64(2), "2026-11-02"}; !slices.Equal(args, want) {
		t.Errorf("args = %v, want %v", args, want)
	}
	for _, part := range []string{`INSERT INTO "tenant_3".daily_usage`, `($1::bigint, $2::date, 'deliver'), ($3::bigint, $4::date, 'deliver')`} {
		if !strings.Contains(q, part) {
			t.Errorf("statement lacks %q:\n%s", part, q)
		}
	}
	if _, _, err := c.Create(tn, "receive", []int64{1}, []string{"2026-11-01"}); err == nil {
		t.Error("Create on side receive succeeded")
	}
}
