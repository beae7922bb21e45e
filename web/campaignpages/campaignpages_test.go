package campaignpages

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/bizmsg/platform/platform/accounts"
	"github.com/bizmsg/platform/platform/campaigns"
	"github.com/bizmsg/platform/web"
)

// The bar's parts follow the counts, meet without gaps and end at the
// bar's width, whatever the rounding.
func TestSegments(t *testing.T) {
	t.Parallel()
	for _, c := range []campaigns.Counts{
		{Total: 3, Read: 1, Delivered: 1, Pending: 1},
		{Total: 7, Read: 1, Sent: 2, Queued: 1, Failed: 1, Skipped: 1, Pending: 1},
		{Total: 100_000, Delivered: 1, Pending: 99_999},
		{},
	} {
		parts := segments(c)
		if len(parts) != 7 {
			t.Fatalf("%d parts", len(parts))
		}
		x, sum := 0, 0
		for _, p := range parts {
			if p.X != x || p.Width < 0 {
				t.Fatalf("counts %+v: part %+v does not start where the last ended (%d)", c, p, x)
			}
			if p.Count == 0 && p.Width != 0 {
				t.Fatalf("counts %+v: an empty part %+v has a width", c, p)
			}
			x += p.Width
			sum += p.Count
		}
		if sum > 0 && x != barWidth || sum == 0 && x != 0 {
			t.Fatalf("counts %+v: parts end at %d", c, x)
		}
	}
	parts := segments(campaigns.Counts{Total: 4, Read: 1, Delivered: 1, Skipped: 1, Pending: 1})
	if parts[0].Status != "read" || parts[0].Width != 250 || parts[6].Status != "pending" || parts[6].X != 750 {
		t.Fatalf("parts %+v", parts)
	}
}

func TestTexts(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		done, total, percent int
		want                 string
	}{
		{0, 0, 0, "No recipients yet."},
		{1, 1, 100, "1 of 1 recipient done (100%)"},
		{412, 100_000, 0, "412 of 100,000 recipients done (0%)"},
		{1_234_567, 2_000_000, 61, "1,234,567 of 2,000,000 recipients done (61%)"},
	} {
		if got := summary(tc.done, tc.total, tc.percent); got != tc.want {
			t.Errorf("summary(%d, %d) = %q, want %q", tc.done, tc.total, got, tc.want)
		}
	}
	for _, tc := range []struct {
		in   campaigns.Added
		want string
	}{
		{campaigns.Added{Added: 3}, "3 recipients added."},
		{campaigns.Added{Added: 1, Duplicates: 1}, "1 recipient added; 1 duplicate was not."},
		{campaigns.Added{Added: 2, Duplicates: 2, Invalid: []campaigns.Invalid{{Row: 3}}},
			"2 recipients added; 2 duplicates and 1 invalid row were not."},
		{campaigns.Added{Invalid: []campaigns.Invalid{{Row: 1}, {Row: 2}}}, "0 recipients added; 2 invalid rows were not."},
	} {
		if got := addedSummary(tc.in); got != tc.want {
			t.Errorf("addedSummary(%+v) = %q, want %q", tc.in, got, tc.want)
		}
	}
	for _, code := range []string{"campaign_created", "campaign_created_recipients", "recipients_added", "campaign_started",
		"campaign_scheduled", "campaign_paused", "campaign_resumed", "campaign_canceled"} {
		if campaignNotice(code) == "" {
			t.Errorf("notice %s has no text", code)
		}
	}
	if campaignNotice("<script>") != "" {
		t.Error("an unknown notice code has a text")
	}
}

// A page reloads itself while its campaign releases recipients or has
// messages waiting for the network, and a scheduled one shortly before
// its time.
func TestLive(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 22, 14, 0, 0, 0, time.UTC)
	soon, later := now.Add(30*time.Second), now.Add(time.Hour)
	for _, tc := range []struct {
		c    campaigns.Campaign
		want bool
	}{
		{campaigns.Campaign{Status: campaigns.StatusDraft}, false},
		{campaigns.Campaign{Status: campaigns.StatusRunning}, true},
		{campaigns.Campaign{Status: campaigns.StatusScheduled, SendAt: &soon}, true},
		{campaigns.Campaign{Status: campaigns.StatusScheduled, SendAt: &later}, false},
		{campaigns.Campaign{Status: campaigns.StatusPaused}, false},
		{campaigns.Campaign{Status: campaigns.StatusCompleted, Counts: campaigns.Counts{Total: 2, Queued: 1, Sent: 1}}, true},
		{campaigns.Campaign{Status: campaigns.StatusCompleted, Counts: campaigns.Counts{Total: 2, Delivered: 2}}, false},
	} {
		if got := viewCampaign(tc.c, nil).Live(now); got != tc.want {
			t.Errorf("%s %+v: live %v, want %v", tc.c.Status, tc.c.Counts, got, tc.want)
		}
	}
}

// The campaign page offers each action where the campaign's state allows
// it, to owners and admins only; the bar's parts and the counts follow
// the campaign; a live page reloads itself by a meta refresh.
func TestCampaignPageRender(t *testing.T) {
	t.Parallel()
	pages, err := web.ParsePages()
	if err != nil {
		t.Fatal(err)
	}
	created := time.Date(2026, 11, 22, 14, 3, 0, 0, time.UTC)
	camp := func(st campaigns.Status, counts campaigns.Counts) campaignView {
		return viewCampaign(campaigns.Campaign{ID: 9, Name: "Spring <sale>", Status: st, SenderNumberIDs: []int64{4, 5},
			Counts: counts, SkipReasons: map[string]int{"opted_out": counts.Skipped}, CreatedAt: created,
			ReservePercent: 10}, map[int64]string{4: "+14155550100"})
	}
	running := campaigns.Counts{Total: 4, Delivered: 1, Queued: 1, Skipped: 1, Pending: 1}
	for _, tc := range []struct {
		name      string
		role      string
		view      campaignView
		live      bool
		want, not []string
	}{
		{"admin, draft", accounts.RoleAdmin, camp(campaigns.StatusDraft, campaigns.Counts{Total: 2, Pending: 2}), false,
			[]string{`action="/campaigns/9/start"`, `href="/campaigns/9/cancel"`, `action="/campaigns/9/recipients"`,
				`enctype="multipart/form-data"`, `name="csrf_token" value="tok"`, "Spring &lt;sale&gt;", "&#43;14155550100, #5",
				`class="s-pending" data-status="pending" x="0" y="0" width="1000"`, "0 of 2 recipients done (0%)"},
			[]string{`action="/campaigns/9/pause"`, `action="/campaigns/9/resume"`, "http-equiv"}},
		{"owner, running", accounts.RoleOwner, camp(campaigns.StatusRunning, running), true,
			[]string{`action="/campaigns/9/pause"`, `href="/campaigns/9/cancel"`, `<meta http-equiv="refresh" content="5; url=/campaigns/9">`,
				`id="refresh-off"`, `data-reason="opted_out"`, `class="s-delivered" data-status="delivered" x="0" y="0" width="250"`,
				"3 of 4 recipients done (75%)"},
			[]string{`action="/campaigns/9/start"`, `action="/campaigns/9/recipients"`}},
		{"admin, paused", accounts.RoleAdmin, camp(campaigns.StatusPaused, running), false,
			[]string{`action="/campaigns/9/resume"`, `href="/campaigns/9/cancel"`},
			[]string{`action="/campaigns/9/pause"`, `action="/campaigns/9/start"`}},
		{"admin, completed", accounts.RoleAdmin, camp(campaigns.StatusCompleted, campaigns.Counts{Total: 1, Read: 1}), false,
			[]string{"1 of 1 recipient done (100%)"},
			[]string{`action="/campaigns/9/`, `href="/campaigns/9/cancel"`}},
		{"member, running", accounts.RoleMember, camp(campaigns.StatusRunning, running), true,
			[]string{"3 of 4 recipients done (75%)", `id="campaign-status">running`},
			[]string{`action="/campaigns/9/`, `href="/campaigns/9/cancel"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			data := campaignData{Campaign: tc.view, Statuses: campaigns.RecipientStatuses(), Filter: web.PageData{}}
			pd := web.PageData{Title: "Campaign", Nav: "campaigns", CSRF: "tok",
				Session: &web.Session{Principal: accounts.Principal{Role: tc.role}}, Data: &data}
			if tc.live {
				data.Live, data.RefreshOff = true, "/campaigns/9?refresh=off"
				pd.Refresh, pd.RefreshURL = refreshSeconds, "/campaigns/9"
			}
			var buf bytes.Buffer
			if err := pages["campaign"].Execute(&buf, pd); err != nil {
				t.Fatal(err)
			}
			out := buf.String()
			for _, s := range tc.want {
				if !strings.Contains(out, s) {
					t.Errorf("page lacks %q", s)
				}
			}
			for _, s := range tc.not {
				if strings.Contains(out, s) {
					t.Errorf("page has %q", s)
				}
			}
		})
	}
}
