package web

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/bizmsg/platform/platform/senders"
	"github.com/bizmsg/platform/platform/usage"
)

// quotaView is one sender number's allowance today.
type quotaView struct {
	usage.SenderUsage
	Label, Tone string
	// CanSend is false for a number that cannot send yet (waiting for its
	// code or its owner's verification) or any more (suspended,
	// rejected): its daily limit is no allowance, so the page shows none.
	CanSend bool
	// Pending is true for a number that can send once verified.
	Pending bool
}

// overviewData is the overview page's data.
type overviewData struct {
	Today  usage.Day
	Quotas []quotaView
	// ResetsIn says when the daily limits reset (next UTC midnight).
	ResetsIn string
	Chart    chart
	// The getting-started checklist: a sender, an active one, a key.
	HasSender, HasActive, HasKey bool
}

// overview shows today's sends and failures, each number's remaining
// quota and the last 30 days by status: the usage report the API serves
// (usage.Service.Report over the default 30-day period).
func (d *Dashboard) overview(c *gin.Context) {
	s := session(c)
	var report usage.Report
	hasKey, ok := d.loadWithKey(c, func(ctx context.Context) (err error) {
		report, err = d.cfg.Usage.Report(ctx, s.Principal.Tenant, usage.Query{})
		return err
	})
	if !ok {
		return
	}
	data := overviewData{
		ResetsIn:  hoursMinutes(untilNextUTCDay(d.clock.Now())),
		Chart:     newChart(report.Daily),
		HasSender: len(report.PerSender) > 0,
		HasKey:    hasKey,
	}
	if n := len(report.Daily); n > 0 {
		data.Today = report.Daily[n-1]
	}
	for _, q := range report.PerSender {
		st := senders.Status(q.Status)
		v := quotaView{SenderUsage: q, CanSend: st == senders.StatusActive,
			Pending: st == senders.StatusPendingVerification || st == senders.StatusPendingAccountVerification}
		v.Label, v.Tone = badge(st)
		data.HasActive = data.HasActive || q.Status == string(senders.StatusActive)
		data.Quotas = append(data.Quotas, v)
	}
	d.renderStatus(c, http.StatusOK, "overview", pageData{Title: "Overview", Nav: "overview", Notice: notice(c), Data: data})
}

// hoursMinutes renders a duration as "5 h 07 min".
func hoursMinutes(d time.Duration) string {
	d = d.Round(time.Minute)
	return fmt.Sprintf("%d h %02d min", int(d/time.Hour), int(d%time.Hour/time.Minute))
}
