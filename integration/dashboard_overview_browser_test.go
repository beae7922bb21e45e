package integration

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/bizmsg/platform/platform/db"
)

// The overview on a phone (390 px wide), for an organization whose only
// number still waits for its code and that has busy days on its chart:
// the number shows no daily allowance (it cannot send yet), and every axis
// label of the chart, the last date and the four-digit counts included, is
// drawn inside the SVG rather than cut at its edge.
func TestDashboardBrowserPhoneOverview(t *testing.T) {
	t.Parallel()
	e := startBrowser(t, Options{})
	b := e.b
	email, _ := e.signup("")
	n := e.addSender("+14155550401", "Waiting for its code")
	senderID, err := strconv.ParseInt(n, 10, 64)
	if err != nil {
		t.Fatal(err)
	}

	// Busy days: up to 1,500 messages, so the y axis reaches 2000.
	var orgID int64
	ctx := context.Background()
	if err := e.App.DB.Pool.QueryRow(ctx, `SELECT m.organization_id FROM central.memberships m
		JOIN central.users u ON u.id = m.user_id WHERE u.email = $1`, email).Scan(&orgID); err != nil {
		t.Fatal(err)
	}
	table := pgx.Identifier{db.SchemaFor(orgID), "daily_usage"}.Sanitize()
	today := e.Clock.Now().UTC()
	for ago, used := range []int{1500, 900, 0, 1200} {
		day := today.AddDate(0, 0, -ago).Format("2006-01-02")
		if used == 0 {
			continue
		}
		if _, err := e.App.DB.Pool.Exec(ctx, `INSERT INTO `+table+` (sender_number_id, day, side, used)
			VALUES ($1, $2::date, 'accept', $3)`, senderID, day, used); err != nil {
			t.Fatal(err)
		}
		if _, err := e.App.DB.Pool.Exec(ctx, `INSERT INTO `+table+` (sender_number_id, day, side, sent, failed)
			VALUES ($1, $2::date, 'deliver', $3, $4)`, senderID, day, used-used/10, used/10); err != nil {
			t.Fatal(err)
		}
	}

	b.Viewport(390, 844)
	b.Open("/")
	remaining := b.Text("#remaining-" + n)
	if strings.Contains(remaining, "1000") || strings.Contains(remaining, "1,000") || !strings.Contains(remaining, "after verification") {
		t.Fatalf("a number waiting for its code shows %q remaining, want none until verification", remaining)
	}
	if top := b.Eval(`[...document.querySelectorAll("#usage-chart text.axis")].map(t => t.textContent).join(",")`); !strings.Contains(top, "2000") {
		t.Fatalf("axis labels %q lack the top count 2000", top)
	}
	// Every axis label's box, in the SVG's user units, within its viewBox.
	cut := b.Eval(`(() => {
		const svg = document.getElementById("usage-chart");
		const vb = svg.viewBox.baseVal;
		return [...svg.querySelectorAll("text.axis")].filter(t => {
			const r = t.getBBox();
			return r.width === 0 || r.x < vb.x || r.y < vb.y || r.x + r.width > vb.x + vb.width || r.y + r.height > vb.y + vb.height;
		}).map(t => {
			const r = t.getBBox();
			return t.textContent + " at x " + r.x.toFixed(1) + ".." + (r.x + r.width).toFixed(1) + ", y " + r.y.toFixed(1) + ".." + (r.y + r.height).toFixed(1);
		}).join("; ");
	})()`)
	if cut != "" {
		t.Fatalf("axis labels outside the chart's 720×240 box at 390 px: %s", cut)
	}
	last := b.Eval(`[...document.querySelectorAll("#usage-chart text.axis")].pop().textContent`)
	if want := today.Format("Jan 2"); last != want {
		t.Fatalf("the last axis label is %q, want today, %q", last, want)
	}
}
