package campaignpages

import (
	"sort"
	"strconv"
	"time"

	"github.com/bizmsg/platform/platform/campaigns"
)

// barWidth is the width of a progress bar's SVG viewBox: segments are
// placed in these units and the bar is stretched to the page's width.
const barWidth = 1000

// segment is one status's part of a campaign's progress bar.
type segment struct {
	// Status is the recipients' status (read, delivered, ...); Label
	// says it for people.
	Status, Label string
	Count         int
	// X and Width place the segment in the bar (barWidth units).
	X, Width int
}

// reason is a skip reason and how many recipients it skipped.
type reason struct {
	Name  string
	Count int
}

// campaignView is a campaign as the pages show it.
type campaignView struct {
	campaigns.Campaign
	// Tone is the status badge's class.
	Tone string
	// Segments are the progress bar's parts: every status, in the order
	// of a recipient's way (done first, pending last), with its count.
	Segments []segment
	// Done is how many recipients were released or skipped, Percent its
	// share of the total (rounded down).
	Done, Percent int
	// Reasons are the skip reasons, most frequent first.
	Reasons []reason
	// SenderPhones are the campaign's sender numbers' phones, in its
	// order ("#id" for one the organization no longer has).
	SenderPhones []string
}

// Summary says the progress in words: the bar's text alternative.
func (v campaignView) Summary() string {
	return summary(v.Done, v.Counts.Total, v.Percent)
}

// CanStart, CanPause, CanResume, CanCancel and CanAddRecipients report
// whether the campaign's state allows the action, so the page offers only
// the buttons that can succeed (the service decides, and refuses any
// other with 409 campaign_state).
func (v campaignView) CanStart() bool { return v.Status == campaigns.StatusDraft }

// CanPause: see CanStart.
func (v campaignView) CanPause() bool {
	return v.Status == campaigns.StatusRunning || v.Status == campaigns.StatusScheduled
}

// CanResume: see CanStart.
func (v campaignView) CanResume() bool { return v.Status == campaigns.StatusPaused }

// CanCancel: see CanStart.
func (v campaignView) CanCancel() bool {
	return v.Status != campaigns.StatusCompleted && v.Status != campaigns.StatusCanceled
}

// CanAddRecipients: see CanStart.
func (v campaignView) CanAddRecipients() bool { return v.Status == campaigns.StatusDraft }

// IsTemplate reports whether the campaign sends a template.
func (v campaignView) IsTemplate() bool { return v.Template != nil }

// refreshWindow is how close a scheduled campaign's send_at must be for
// its page to refresh itself.
const refreshWindow = time.Minute

// Live reports whether the campaign's page should refresh itself at now:
// while it releases recipients (running, or scheduled within a minute of
// its send_at) and while some of its messages wait to be handed to the
// network (queued).
func (v campaignView) Live(now time.Time) bool {
	switch {
	case v.Status == campaigns.StatusRunning, v.Counts.Queued > 0:
		return true
	case v.Status == campaigns.StatusScheduled:
		return v.SendAt == nil || v.SendAt.Sub(now) <= refreshWindow
	}
	return false
}

// campaignTone is the badge class of a campaign status.
func campaignTone(s campaigns.Status) string {
	switch s {
	case campaigns.StatusCompleted:
		return "ok"
	case campaigns.StatusRunning, campaigns.StatusScheduled:
		return "info"
	case campaigns.StatusPaused:
		return "warn"
	}
	return "off"
}

// viewCampaign is c as the pages show it; phones names the
// organization's sender numbers by id.
func viewCampaign(c campaigns.Campaign, phones map[int64]string) campaignView {
	v := campaignView{Campaign: c, Tone: campaignTone(c.Status)}
	v.Segments = segments(c.Counts)
	v.Done = c.Counts.Total - c.Counts.Pending
	if c.Counts.Total > 0 {
		v.Percent = v.Done * 100 / c.Counts.Total
	}
	for name, n := range c.SkipReasons {
		v.Reasons = append(v.Reasons, reason{Name: name, Count: n})
	}
	sort.Slice(v.Reasons, func(i, j int) bool {
		a, b := v.Reasons[i], v.Reasons[j]
		return a.Count > b.Count || a.Count == b.Count && a.Name < b.Name
	})
	for _, id := range c.SenderNumberIDs {
		if p, ok := phones[id]; ok {
			v.SenderPhones = append(v.SenderPhones, p)
		} else {
			v.SenderPhones = append(v.SenderPhones, "#"+itoa(id))
		}
	}
	return v
}

// segments splits a bar of barWidth among the counts' statuses. Each
// edge is rounded from the running total, so the parts meet without gaps
// and end exactly at barWidth.
func segments(c campaigns.Counts) []segment {
	parts := []segment{
		{Status: "read", Label: "read", Count: c.Read},
		{Status: "delivered", Label: "delivered", Count: c.Delivered},
		{Status: "sent", Label: "sent", Count: c.Sent},
		{Status: "queued", Label: "queued", Count: c.Queued},
		{Status: "failed", Label: "failed", Count: c.Failed},
		{Status: "skipped", Label: "skipped", Count: c.Skipped},
		{Status: "pending", Label: "pending", Count: c.Pending},
	}
	total := 0
	for _, p := range parts {
		total += p.Count
	}
	if total == 0 {
		return parts
	}
	sum := 0
	for i := range parts {
		from := sum * barWidth / total
		sum += parts[i].Count
		parts[i].X, parts[i].Width = from, sum*barWidth/total-from
	}
	return parts
}

// summary is "412 of 1,000 recipients done (41%)".
func summary(done, total, percent int) string {
	if total == 0 {
		return "No recipients yet."
	}
	noun := "recipients"
	if total == 1 {
		noun = "recipient"
	}
	return thousands(done) + " of " + thousands(total) + " " + noun + " done (" + itoa(int64(percent)) + "%)"
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// thousands writes n with a comma between groups of three digits.
func thousands(n int) string {
	s := strconv.Itoa(n)
	if n < 0 {
		return "-" + thousands(-n)
	}
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
