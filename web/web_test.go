package web

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/bizmsg/platform/platform/messages"
	"github.com/bizmsg/platform/platform/senders"
	"github.com/bizmsg/platform/platform/usage"
)

func TestNiceCeil(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want int64 }{
		{0, 4}, {1, 4}, {4, 4}, {5, 8}, {8, 8}, {9, 20}, {20, 20}, {21, 40}, {41, 80}, {81, 100},
		{101, 200}, {999, 1000}, {1001, 2000}, {4001, 5000}, {5001, 8000},
	} {
		if got := niceCeil(tc.in); got != tc.want {
			t.Errorf("niceCeil(%d) = %d, want %d", tc.in, got, tc.want)
		}
	}
}

func TestNewChart(t *testing.T) {
	t.Parallel()
	day0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	days := make([]usage.Day, 30)
	for i := range days {
		days[i].Date = day0.AddDate(0, 0, i).Format(time.DateOnly)
	}
	days[29].Counts = usage.Counts{Read: 1, Delivered: 2, Sent: 2, Queued: 1, Failed: 2, Total: 8, Received: 4}
	days[10].Counts = usage.Counts{Failed: 1, Total: 1}
	ch := newChart(days)

	if len(ch.Bars) != 30 || len(ch.YTicks) != 5 || len(ch.XLabels) != 6 {
		t.Fatalf("bars %d, y ticks %d, x labels %d; want 30, 5, 6", len(ch.Bars), len(ch.YTicks), len(ch.XLabels))
	}
	if ch.YTicks[4].Label != "8" || ch.YTicks[4].Pos != ch.Top || ch.YTicks[0].Pos != ch.Bottom {
		t.Fatalf("y axis %+v", ch.YTicks)
	}
	last := ch.Bars[29]
	var classes []string
	var height float64
	for _, s := range last.Segments {
		classes = append(classes, s.Class)
		height += s.H
	}
	if want := "s-read s-delivered s-sent s-queued s-failed"; strings.Join(classes, " ") != want {
		t.Fatalf("segments %v, want %s (bottom first)", classes, want)
	}
	// The peak day fills the plot (within rounding); segments stack upwards.
	if plot := ch.Bottom - ch.Top; height < plot-0.5 || height > plot+0.5 {
		t.Fatalf("peak bar height %.1f, plot %.1f", height, plot)
	}
	for i := 1; i < len(last.Segments); i++ {
		if last.Segments[i].Y >= last.Segments[i-1].Y {
			t.Fatalf("segment %d is not above the one below: %+v", i, last.Segments)
		}
	}
	if len(ch.Bars[0].Segments) != 0 || len(ch.Bars[10].Segments) != 1 || ch.Bars[10].Segments[0].Class != "s-failed" {
		t.Fatalf("empty and failure-only days: %+v %+v", ch.Bars[0], ch.Bars[10])
	}
	if !strings.Contains(last.Title, "2026-11-30: 8 messages (1 read, 2 delivered, 2 sent, 1 queued, 2 failed)") {
		t.Fatalf("tooltip %q", last.Title)
	}
	if ch.XLabels[5].Label != "Nov 30" {
		t.Fatalf("last x label %q, want the last day", ch.XLabels[5].Label)
	}
	// The last date ends at its bar's right edge (centred, it would run
	// past the SVG's edge on a phone); the others are centred.
	if l := ch.XLabels[5]; l.Anchor != "end" || l.Pos != r1(last.X+last.W) || ch.XLabels[0].Anchor != "middle" {
		t.Fatalf("x labels %+v", ch.XLabels)
	}
	// The plot starts after the longest y label at the phone size.
	if ch.Left != chartLeft {
		t.Fatalf("left %.1f with one-digit labels, want %d", ch.Left, chartLeft)
	}
	busy := append([]usage.Day(nil), days...)
	busy[29].Counts = usage.Counts{Sent: 15000, Total: 15000}
	if wide := newChart(busy); wide.YTicks[4].Label != "20000" || wide.Left < float64(axisGap+axisCharWidth*5) {
		t.Fatalf("five-digit labels %+v, left %.1f", wide.YTicks, wide.Left)
	}
	if want := "9 messages from 2026-11-01 to 2026-11-30: 1 read, 2 delivered, 2 sent, 1 queued, 3 failed; 4 received; the busiest day had 8."; ch.Summary != want {
		t.Fatalf("summary %q, want %q", ch.Summary, want)
	}
	if empty := newChart(nil); empty.Summary != "No data." || len(empty.Bars) != 0 {
		t.Fatalf("empty chart %+v", empty)
	}
}

func TestRFC3339(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"":                          "",
		"2026-11-22T14:03":          "2026-11-22T14:03:00Z",
		"2026-11-22T14:03:05":       "2026-11-22T14:03:05Z",
		"2026-11-22T14:03:05Z":      "2026-11-22T14:03:05Z",
		"2026-11-22T14:03:05+02:00": "2026-11-22T14:03:05+02:00",
		"yesterday":                 "yesterday",
	} {
		if got := rfc3339(in); got != want {
			t.Errorf("rfc3339(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestShellQuote(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"plain":                 `'plain'`,
		`{"content":"it's ok"}`: `'{"content":"it'\''s ok"}'`,
		"$HOME `x`":             "'$HOME `x`'",
	} {
		if got := shellQuote(in); got != want {
			t.Errorf("shellQuote(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestViewSender(t *testing.T) {
	t.Parallel()
	sent := time.Date(2026, 11, 22, 14, 3, 0, 0, time.UTC)
	limit := 50
	for _, tc := range []struct {
		s            senders.Sender
		label, tone  string
		awaitingCode bool
		next         string
		limit        int
	}{
		{senders.Sender{Status: senders.StatusPendingVerification}, "Waiting for code", "warn", true, "being delivered", 1000},
		{senders.Sender{Status: senders.StatusPendingVerification, OTPSentAt: &sent}, "Waiting for code", "warn", true, "sent at 14:03 UTC", 1000},
		{senders.Sender{Status: senders.StatusPendingAccountVerification}, "Owner not verified", "info", false, "must now verify their account", 1000},
		{senders.Sender{Status: senders.StatusActive, DailyLimitOverride: &limit}, "Active", "ok", false, "Ready to send", 50},
		{senders.Sender{Status: senders.StatusSuspended}, "Suspended", "bad", false, "account administrator", 1000},
		{senders.Sender{Status: senders.StatusRejected}, "Rejected", "bad", false, "Register another number", 1000},
	} {
		v := viewSender(tc.s, 1000)
		if v.Label != tc.label || v.Tone != tc.tone || v.AwaitingCode != tc.awaitingCode || !strings.Contains(v.Next, tc.next) ||
			v.Limit != tc.limit || v.LimitIsDefault != (tc.s.DailyLimitOverride == nil) {
			t.Errorf("%s: %+v", tc.s.Status, v)
		}
	}
}

func TestCSRFTokens(t *testing.T) {
	t.Parallel()
	d := &Dashboard{csrfKey: deriveKey([]byte(strings.Repeat("s", 32)), "bizmsg-web-csrf")}
	other := &Dashboard{csrfKey: deriveKey([]byte(strings.Repeat("t", 32)), "bizmsg-web-csrf")}
	a, err := newToken()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := newToken()
	if !validToken(a) || validToken(a[1:]) || validToken(a+"x") || validToken(strings.Repeat("!", len(a))) || a == b {
		t.Fatalf("token shape checks failed for %q", a)
	}
	tok := d.csrfToken(purposeSession, a)
	for name, other := range map[string]string{
		"other session":  d.csrfToken(purposeSession, b),
		"other purpose":  d.csrfToken(purposePreSession, a),
		"other secret":   other.csrfToken(purposeSession, a),
		"the raw secret": a,
	} {
		if tok == other || validCSRF(other, tok) {
			t.Errorf("%s: token accepted", name)
		}
	}
	if !validCSRF(tok, d.csrfToken(purposeSession, a)) || validCSRF("", "") {
		t.Fatal("validCSRF")
	}
}

// Every page parses, and the signed-out pages render with no data.
func TestPagesRender(t *testing.T) {
	t.Parallel()
	pages, err := parsePages()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"error", "login", "signup"} {
		var buf bytes.Buffer
		data := pageData{Title: "T <b>", CSRF: "tok", Message: "m", Fields: map[string][]string{"email": {"is required"}}}
		if err := pages[name].Execute(&buf, data); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		out := buf.String()
		if !strings.Contains(out, "T &lt;b&gt;") || strings.Contains(out, "T <b>") {
			t.Fatalf("%s: the title is not escaped", name)
		}
		if name != "error" && (!strings.Contains(out, `name="csrf_token" value="tok"`) || !strings.Contains(out, `aria-invalid="true"`)) {
			t.Fatalf("%s: no CSRF field or invalid mark:\n%s", name, out)
		}
	}
	if len(pages) != len(pageNames) {
		t.Fatal("a page is missing")
	}
}

// A message's badge follows its status, and a message's From and Contact
// are its two sides whichever way it went.
func TestMessageViews(t *testing.T) {
	t.Parallel()
	for status, want := range map[string]string{
		messages.StatusQueued: "warn", messages.StatusSent: "info", messages.StatusDelivered: "ok",
		messages.StatusRead: "ok", messages.StatusFailed: "bad", messages.StatusReceived: "info",
	} {
		if got := statusClass(status); got != want {
			t.Errorf("statusClass(%s) = %s, want %s", status, got, want)
		}
	}
	writer := "+14155550010"
	for _, tc := range []struct {
		name          string
		m             messageView
		from, contact string
		inbound       bool
	}{
		{"outbound", messageView{Message: messages.Message{Direction: messages.DirectionOutbound, ToPhone: writer},
			SenderPhone: "+14155550001"}, "+14155550001", writer, false},
		{"inbound", messageView{Message: messages.Message{Direction: messages.DirectionInbound, ToPhone: "+14155550001",
			FromPhone: &writer}, SenderPhone: "+14155550001"}, writer, writer, true},
		{"inbound without a writer", messageView{Message: messages.Message{Direction: messages.DirectionInbound}}, "", "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if tc.m.From() != tc.from || tc.m.Contact() != tc.contact || tc.m.Inbound() != tc.inbound {
				t.Fatalf("from %q contact %q inbound %v", tc.m.From(), tc.m.Contact(), tc.m.Inbound())
			}
		})
	}
}
