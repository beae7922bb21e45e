package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/bizmsg/platform/platform/senders"
)

// docs/api.md, §Scheduled sends, end to end: a send with send_at waits as
// scheduled, is released within 5 s of its time through the checks of a
// send made then, and can be canceled until its release.

// scheduledMsg is the message resource with the fields of a scheduled send.
type scheduledMsg struct {
	message
	SendAt     *string `json:"send_at"`
	CanceledAt *string `json:"canceled_at"`
}

// at formats t as a send_at.
func at(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// dueIn is a send_at d from now, on a whole second.
func dueIn(d time.Duration) time.Time {
	return time.Now().Add(d).Truncate(time.Second).Add(time.Second)
}

// scheduled is the body of a text message from sender id to p, due at sendAt.
func scheduled(id int64, p, content string, sendAt time.Time) map[string]any {
	b := text(id, p, content)
	b["send_at"] = at(sendAt)
	return b
}

// mustSchedule schedules body and checks the 202 answer.
func (e *msgEnv) mustSchedule(org *Org, body map[string]any) scheduledMsg {
	e.t.Helper()
	r := e.send(org, body)
	if r.Status != http.StatusAccepted {
		e.t.Fatalf("schedule = %d %s, want 202", r.Status, r.Body)
	}
	var out struct {
		Data scheduledMsg `json:"data"`
	}
	r.JSON(e.t, &out)
	if m := out.Data; m.Status != "scheduled" || m.SendAt == nil || *m.SendAt != body["send_at"] || m.RecipientUserID != nil {
		e.t.Fatalf("scheduled message %s", r.Body)
	}
	return out.Data
}

// scheduleMany schedules n text messages from sender sid, the i-th to
// phoneN(100+i), all due at sendAt, on 8 connections, and returns their
// ids in that order. It fails the test if scheduling them outlasts their
// send_at less a second: what follows needs them all scheduled before.
func (e *msgEnv) scheduleMany(org *Org, sid int64, n int, sendAt time.Time) []int64 {
	e.t.Helper()
	ids := make([]int64, n)
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += 8 {
				body := scheduled(sid, phoneN(100+i), fmt.Sprint("m", i), sendAt)
				r := e.send(org, body)
				if r.Status != http.StatusAccepted {
					e.t.Errorf("schedule %d = %d %s", i, r.Status, r.Body)
					return
				}
				var out struct {
					Data scheduledMsg `json:"data"`
				}
				if err := json.Unmarshal(r.Body, &out); err != nil {
					e.t.Error(err)
					return
				}
				ids[i] = out.Data.ID
			}
		}()
	}
	wg.Wait()
	if e.t.Failed() {
		e.t.FailNow()
	}
	if left := time.Until(sendAt); left < time.Second {
		e.t.Fatalf("scheduling %d messages left %s before their send_at; the machine is too slow for this test", n, left)
	}
	return ids
}

// getScheduled reads a message with its scheduling fields.
func (e *msgEnv) getScheduled(org *Org, id int64) scheduledMsg {
	e.t.Helper()
	r := e.Do(Request{Method: http.MethodGet, Path: fmt.Sprintf("%s/%d", messagesPath, id), Header: org.Key()})
	if r.Status != http.StatusOK {
		e.t.Fatalf("get message %d = %d %s", id, r.Status, r.Body)
	}
	var body struct {
		Data scheduledMsg `json:"data"`
	}
	r.JSON(e.t, &body)
	return body.Data
}

// cancel posts a cancellation.
func (e *msgEnv) cancel(org *Org, id int64) *Response {
	return e.Do(Request{Method: http.MethodPost, Path: fmt.Sprintf("%s/%d/cancel", messagesPath, id), Header: org.Key()})
}

// acceptCounter is the sender's 'accept' counter of the UTC day of day.
func (e *msgEnv) acceptCounter(org *Org, sid int64, day time.Time) int {
	e.t.Helper()
	var n int
	if err := e.App.DB.Pool.QueryRow(context.Background(), `SELECT coalesce(sum(used), 0) FROM `+
		org.Tenant.Table("daily_usage")+` WHERE sender_number_id = $1 AND side = 'accept' AND day = $2::date`,
		sid, day.UTC().Format(time.DateOnly)).Scan(&n); err != nil {
		e.t.Fatal(err)
	}
	return n
}

// wantSent checks that n messages were counted against sender sid's
// limit today and that the network holds n of org's messages: a release
// refused counts and sends nothing.
func (e *msgEnv) wantSent(org *Org, sid int64, n int) {
	e.t.Helper()
	if got := e.acceptCounter(org, sid, e.Clock.Now()); got != n {
		e.t.Fatalf("accept counter %d, want %d", got, n)
	}
	if got := e.networkMessages(org); got != n {
		e.t.Fatalf("the network holds %d messages, want %d", got, n)
	}
}

// messageHook is a webhook payload about a message, with its outcome.
type messageHook struct {
	Type string `json:"type"`
	Data struct {
		ID         int64   `json:"id"`
		Status     string  `json:"status"`
		ErrorCode  *string `json:"error_code"`
		CanceledAt *string `json:"canceled_at"`
	} `json:"data"`
}

// decodeHooks decodes the receiver's requests.
func decodeHooks(t *testing.T, hs []hook) []messageHook {
	t.Helper()
	out := make([]messageHook, len(hs))
	for i, h := range hs {
		if err := json.Unmarshal(h.body, &out[i]); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// failedHooks waits for n message.failed events and returns each
// message's error_code by id.
func failedHooks(t *testing.T, rcv *receiver, n int) map[int64]string {
	t.Helper()
	codes := map[int64]string{}
	for _, h := range decodeHooks(t, rcv.until(t, n, fmt.Sprintf("%d message.failed", n))) {
		if h.Type != "message.failed" || h.Data.Status != "failed" || h.Data.ErrorCode == nil {
			t.Fatalf("event %+v", h)
		}
		codes[h.Data.ID] = *h.Data.ErrorCode
	}
	return codes
}

// A scheduled send waits, counted against nothing, and is released within
// 5 s after its send_at, never before, then delivered as any send.
func TestScheduledSendReleasedAtSendAt(t *testing.T) {
	t.Parallel()
	e := startMsg(t, Options{Workers: true})
	org := e.Register(t)
	sid := e.activeSender(org, phoneN(1))
	e.recipient(phoneN(2))

	sendAt := dueIn(3 * time.Second)
	m := e.mustSchedule(org, scheduled(sid, phoneN(2), "see you at noon", sendAt))
	if n := e.acceptCounter(org, sid, e.Clock.Now()); n != 0 {
		t.Fatalf("scheduling counted %d against the daily limit", n)
	}
	rep := e.usage(usagePath, org.Key())
	var raw struct {
		Data struct {
			Totals struct {
				Scheduled int `json:"scheduled"`
				Total     int `json:"total"`
			} `json:"totals"`
			PerSender []struct {
				Scheduled int `json:"scheduled"`
				UsedToday int `json:"used_today"`
			} `json:"per_sender"`
		} `json:"data"`
	}
	r := e.Do(Request{Method: http.MethodGet, Path: usagePath, Header: org.Key()})
	r.JSON(t, &raw)
	if raw.Data.Totals.Scheduled != 1 || raw.Data.Totals.Total != 0 || len(raw.Data.PerSender) != 1 ||
		raw.Data.PerSender[0].Scheduled != 1 || raw.Data.PerSender[0].UsedToday != 0 || rep.Totals.Total != 0 {
		t.Fatalf("usage with one scheduled message: %s", r.Body)
	}
	list := e.Do(Request{Method: http.MethodGet, Path: messagesPath + "?status=scheduled", Header: org.Key()})
	if list.Status != http.StatusOK || !strings.Contains(string(list.Body), fmt.Sprintf(`"id":%d,`, m.ID)) {
		t.Fatalf("status=scheduled = %d %s", list.Status, list.Body)
	}

	var released time.Time
	poll(t, 30*time.Second, func() (bool, string) {
		got := e.getScheduled(org, m.ID)
		now := time.Now()
		if got.Status == "scheduled" {
			return false, "still scheduled"
		}
		if now.Before(sendAt) {
			t.Fatalf("released (%s) %s before its send_at", got.Status, sendAt.Sub(now))
		}
		released = now
		return true, ""
	})
	if late := released.Sub(sendAt); late > 5*time.Second {
		t.Fatalf("released %s after its send_at, want within 5 s", late)
	}
	t.Logf("released within %s of send_at (polled every %s)", released.Sub(sendAt).Round(time.Millisecond), pollEvery)
	poll(t, 30*time.Second, func() (bool, string) {
		got := e.getScheduled(org, m.ID)
		return got.Status == "delivered", "status " + got.Status
	})
	got := e.getScheduled(org, m.ID)
	if got.SendAt == nil || *got.SendAt != at(sendAt) || got.RecipientUserID == nil || got.CanceledAt != nil {
		t.Fatalf("released message %+v", got)
	}
	e.wantSent(org, sid, 1)
}

// send_at must be RFC 3339, in the future and at most 35 days ahead: else
// 422 on send_at and nothing is stored. Scheduling checks the sender
// exists and the template exists, nothing more.
func TestScheduledSendValidation(t *testing.T) {
	t.Parallel()
	e := startMsg(t, Options{})
	org := e.Register(t)
	sid := e.activeSender(org, phoneN(1))
	now := e.Clock.Now()
	for name, sendAt := range map[string]string{
		"past":        at(now.Add(-time.Minute)),
		"now":         at(now.Truncate(time.Second)),
		"beyond 35 d": at(now.Add(35*24*time.Hour + time.Minute)),
		"malformed":   "tomorrow at noon",
		"no zone":     "2026-11-22T14:03:05",
	} {
		b := text(sid, phoneN(2), "hi")
		b["send_at"] = sendAt
		body := wantError(t, e.send(org, b), http.StatusUnprocessableEntity, "validation_failed")
		if errs, _ := body["errors"].(map[string]any); errs["send_at"] == nil || len(errs) != 1 {
			t.Fatalf("%s: errors %v, want send_at alone", name, body["errors"])
		}
	}
	b := text(sid, phoneN(2), "hi")
	b["send_at"] = 1700000000
	wantError(t, e.send(org, b), http.StatusUnprocessableEntity, "validation_failed")

	// The sender must exist in the organization; a template must exist.
	wantError(t, e.send(org, scheduled(sid+100, phoneN(2), "hi", now.Add(time.Hour))),
		http.StatusUnprocessableEntity, "sender_not_found")
	tb := map[string]any{"sender_number_id": sid, "to_phone": phoneN(2), "type": "template",
		"template": map[string]any{"name": "nope", "language": "en"}, "send_at": at(now.Add(time.Hour))}
	wantError(t, e.send(org, tb), http.StatusUnprocessableEntity, "template_not_found")
	if c := e.statusCounts(org); len(c) != 0 {
		t.Fatalf("refused schedules stored messages: %v", c)
	}

	// At most 35 days ahead is accepted, and so is an unreachable
	// recipient: reachability is checked at release.
	e.mustSchedule(org, scheduled(sid, phoneN(3), "far", now.Add(35*24*time.Hour).Truncate(time.Second)))
	// With an Idempotency-Key, a repeat answers the first answer.
	key := map[string]string{"Idempotency-Key": "sched-1"}
	body := scheduled(sid, phoneN(2), "once", now.Add(time.Hour))
	first := e.send(org, body, key)
	again := e.send(org, body, key)
	if first.Status != http.StatusAccepted || again.Status != http.StatusAccepted || string(first.Body) != string(again.Body) ||
		again.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("idempotent schedule: %d %s / %d %s", first.Status, first.Body, again.Status, again.Body)
	}
	body["send_at"] = at(now.Add(2 * time.Hour))
	wantError(t, e.send(org, body, key), http.StatusUnprocessableEntity, "idempotency_key_reused")
	if c := e.statusCounts(org); c["scheduled"] != 2 || len(c) != 1 {
		t.Fatalf("messages %v, want 2 scheduled", c)
	}
}

// At release the message passes the checks of a send made then: an
// opt-out, a suspension and the daily limit that arrive after scheduling
// fail it, with its code and a message.failed event; the daily limit is
// counted at release, not at scheduling.
func TestScheduledSendChecksAtRelease(t *testing.T) {
	t.Parallel()
	e := startMsg(t, Options{Workers: true, Env: map[string]string{"WEBHOOK_ALLOW_PRIVATE": "true"}})
	org := e.Register(t)
	rcv := newReceiver(t)
	createWebhook(t, e.Env, org.Key(), map[string]any{"url": rcv.srv.URL, "events": []string{"message.failed"}})
	good, suspended := e.activeSender(org, phoneN(1)), e.activeSender(org, phoneN(2))
	for i := 10; i < 14; i++ {
		e.recipient(phoneN(i))
	}
	limit := 2
	e.setLimit(org, good, &limit)

	sendAt := dueIn(4 * time.Second)
	optedOut := e.mustSchedule(org, scheduled(good, phoneN(10), "a", sendAt))
	limited := []scheduledMsg{
		e.mustSchedule(org, scheduled(good, phoneN(11), "b", sendAt)),
		e.mustSchedule(org, scheduled(good, phoneN(12), "c", sendAt)),
	}
	fromSuspended := e.mustSchedule(org, scheduled(suspended, phoneN(13), "d", sendAt))
	// Scheduling counted nothing: the limit of 2 still lets a send in now.
	accepted(t, e.send(org, text(good, phoneN(13), "now")))

	r := e.Do(Request{Method: http.MethodPost, Path: "/api/v1/opt-outs", Header: org.Key(), Body: map[string]any{"phone": phoneN(10)}})
	if r.Status != http.StatusCreated {
		t.Fatalf("opt out = %d %s", r.Status, r.Body)
	}
	if _, err := e.App.Senders.Suspend(context.Background(), senders.AdminTarget{Phone: phoneN(2), OrgID: org.ID}); err != nil {
		t.Fatal(err)
	}

	codes := failedHooks(t, rcv, 3)
	if codes[optedOut.ID] != "recipient_opted_out" || codes[fromSuspended.ID] != "sender_not_active" {
		t.Fatalf("failure codes %v", codes)
	}
	// Of the two limited messages one fits the day's limit (the send made
	// meanwhile used one of two) and one fails.
	var limitedFailed, limitedPassed int
	for _, m := range limited {
		switch codes[m.ID] {
		case "daily_limit_exceeded":
			limitedFailed++
		case "":
			limitedPassed++
		}
	}
	if limitedFailed != 1 || limitedPassed != 1 {
		t.Fatalf("limited messages: codes %v", codes)
	}
	for id, code := range codes {
		got := e.getScheduled(org, id)
		if got.Status != "failed" || got.ErrorCode == nil || *got.ErrorCode != code || got.ErrorMessage == nil || *got.ErrorMessage == "" {
			t.Fatalf("message %d after its refused release: %+v", id, got)
		}
	}
	e.waitCounts(org, 30*time.Second, "the passed ones delivered", func(c map[string]int) bool {
		return c["delivered"] == 2 && c["failed"] == 3
	})
	e.wantSent(org, good, 2)
}

// The daily limit a release counts against is that of the release's UTC
// day: a sender that used its whole limit on the day it scheduled a message
// still sends it on the next day.
func TestScheduledSendCountsOnReleaseDay(t *testing.T) {
	t.Parallel()
	e := startMsg(t, Options{Workers: true})
	org := e.Register(t)
	sid := e.activeSender(org, phoneN(1))
	e.recipient(phoneN(2))
	limit := 1
	e.setLimit(org, sid, &limit)
	accepted(t, e.send(org, text(sid, phoneN(2), "today's one")))
	wantError(t, e.send(org, text(sid, phoneN(2), "over")), http.StatusTooManyRequests, "daily_limit_exceeded")

	scheduledOn := e.Clock.Now()
	m := e.mustSchedule(org, scheduled(sid, phoneN(2), "tomorrow's", dueIn(3*time.Second)))
	// The release happens on the service's next UTC day.
	e.Clock.Advance(24 * time.Hour)
	poll(t, 30*time.Second, func() (bool, string) {
		got := e.getScheduled(org, m.ID)
		return got.Status == "delivered", "status " + got.Status
	})
	if a, b := e.acceptCounter(org, sid, scheduledOn), e.acceptCounter(org, sid, e.Clock.Now()); a != 1 || b != 1 {
		t.Fatalf("accept counters: scheduling day %d, release day %d; want 1 and 1", a, b)
	}
}

// Cancel: a scheduled message becomes canceled with a message.canceled
// event and is never released; a second cancel, or a cancel of a message
// that is not scheduled, is 409 not_cancelable; another organization's or
// an unknown id is 404.
func TestCancelScheduledSend(t *testing.T) {
	t.Parallel()
	e := startMsg(t, Options{Workers: true, Env: map[string]string{"WEBHOOK_ALLOW_PRIVATE": "true"}})
	org, other := e.Register(t), e.Register(t)
	rcv := newReceiver(t)
	createWebhook(t, e.Env, org.Key(), map[string]any{"url": rcv.srv.URL, "events": []string{"message.canceled"}})
	sid := e.activeSender(org, phoneN(1))
	e.recipient(phoneN(2))

	later := e.mustSchedule(org, scheduled(sid, phoneN(2), "never", dueIn(time.Hour)))
	soon := e.mustSchedule(org, scheduled(sid, phoneN(2), "canceled before its time", dueIn(3*time.Second)))
	for _, m := range []scheduledMsg{later, soon} {
		r := e.cancel(org, m.ID)
		if r.Status != http.StatusOK {
			t.Fatalf("cancel = %d %s", r.Status, r.Body)
		}
		var body struct {
			Data scheduledMsg `json:"data"`
		}
		r.JSON(t, &body)
		if body.Data.ID != m.ID || body.Data.Status != "canceled" || body.Data.CanceledAt == nil {
			t.Fatalf("canceled message %s", r.Body)
		}
	}
	wantError(t, e.cancel(org, later.ID), http.StatusConflict, "not_cancelable")
	wantError(t, e.cancel(other, later.ID), http.StatusNotFound, "not_found")
	wantError(t, e.cancel(org, later.ID+1000), http.StatusNotFound, "not_found")

	hooks := decodeHooks(t, rcv.until(t, 2, "two message.canceled"))
	seen := map[int64]bool{}
	for _, h := range hooks {
		if h.Type != "message.canceled" || h.Data.Status != "canceled" || h.Data.CanceledAt == nil {
			t.Fatalf("event %+v", h)
		}
		seen[h.Data.ID] = true
	}
	if !seen[later.ID] || !seen[soon.ID] {
		t.Fatalf("events about %v", seen)
	}

	// A delivered message is not cancelable.
	sent := accepted(t, e.send(org, text(sid, phoneN(2), "at once")))
	poll(t, 30*time.Second, func() (bool, string) {
		s := e.getMessage(org, sent.ID).Status
		return s == "delivered", "status " + s
	})
	wantError(t, e.cancel(org, sent.ID), http.StatusConflict, "not_cancelable")

	// The canceled message's release job ran and changed nothing.
	poll(t, 30*time.Second, func() (bool, string) {
		var state string
		if err := e.App.DB.Pool.QueryRow(context.Background(), `SELECT state FROM river.river_job
			WHERE kind = 'message_release' AND (args->>'message_id')::bigint = $1`, soon.ID).Scan(&state); err != nil {
			t.Fatal(err)
		}
		return state == "completed", "release job " + state
	})
	if got := e.getScheduled(org, soon.ID); got.Status != "canceled" {
		t.Fatalf("canceled message after its send_at: %s", got.Status)
	}
	list := e.Do(Request{Method: http.MethodGet, Path: messagesPath + "?status=canceled", Header: org.Key()})
	var page struct {
		Data []scheduledMsg `json:"data"`
	}
	list.JSON(t, &page)
	if list.Status != http.StatusOK || len(page.Data) != 2 {
		t.Fatalf("status=canceled = %d %s", list.Status, list.Body)
	}
	if n := e.networkMessages(org); n != 1 {
		t.Fatalf("the network holds %d messages, want 1", n)
	}
}

// Cancellations racing the releases of many messages due at one instant:
// each message ends canceled (its cancel answered 200) or delivered (its
// cancel answered 409), never both, none delivered twice.
func TestCancelRacingRelease(t *testing.T) {
	t.Parallel()
	e := startMsg(t, Options{Workers: true})
	org := e.Register(t)
	sid := e.activeSender(org, phoneN(1))
	const n = 60
	for i := range n {
		e.recipient(phoneN(100 + i))
	}
	sendAt := dueIn(10 * time.Second)
	ids := e.scheduleMany(org, sid, n, sendAt)
	// Cancel from just before the release until just after it.
	until(time.Until(sendAt), func() bool { return time.Until(sendAt) < 150*time.Millisecond })
	answers := make([]int, n)
	var wg sync.WaitGroup
	for w := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += 6 {
				answers[i] = e.cancel(org, ids[i]).Status
			}
		}()
	}
	wg.Wait()
	var canceled, released int
	for _, a := range answers {
		switch a {
		case http.StatusOK:
			canceled++
		case http.StatusConflict:
			released++
		default:
			t.Fatalf("cancel answers %v", answers)
		}
	}
	t.Logf("%d canceled, %d released first", canceled, released)
	e.waitCounts(org, 30*time.Second, "every message canceled or delivered", func(c map[string]int) bool {
		return c["canceled"]+c["delivered"] == n
	})
	for i, id := range ids {
		got := e.getScheduled(org, id).Status
		if (answers[i] == http.StatusOK) != (got == "canceled") {
			t.Fatalf("message %d: cancel answered %d, status %s", id, answers[i], got)
		}
	}
	if got := e.networkMessages(org); got != released {
		t.Fatalf("the network holds %d messages for %d released", got, released)
	}
	if got := e.acceptCounter(org, sid, e.Clock.Now()); got != released {
		t.Fatalf("accept counter %d for %d released", got, released)
	}
	// A delivery job may hand the next message of its conversation over to
	// a new job: jobs are counted by the messages they name.
	var jobs int
	if err := e.App.DB.Pool.QueryRow(context.Background(), `SELECT count(DISTINCT args->>'message_id') FROM river.river_job
		WHERE kind = 'message_delivery' AND args->>'schema' = $1`, org.Tenant.Schema).Scan(&jobs); err != nil {
		t.Fatal(err)
	}
	if jobs != released {
		t.Fatalf("%d messages with a delivery job for %d released", jobs, released)
	}
}

// Exactly-once release with several worker processes, one of them killed
// with SIGKILL as the releases begin: every scheduled message is released
// and delivered once.
func TestScheduledReleaseAcrossWorkerProcesses(t *testing.T) {
	s := startScaleOut(t, 1000, 1000)
	const n = 300
	for i := range n {
		s.recipient(phoneN(100 + i))
	}
	// Scheduling the 300 through the api process once took over 14.5 s,
	// with the whole suite and other work running beside it: the lead
	// leaves room for that.
	sendAt := dueIn(30 * time.Second)
	s.scheduleMany(s.org, s.sid, n, sendAt)
	s.waitCounts(s.org, 30*time.Second, "the first releases", func(c map[string]int) bool { return c["scheduled"] < n })
	s.workers[0].Signal(syscall.SIGKILL)
	_ = s.workers[0].WaitExit(5 * time.Second)
	t.Logf("killed worker 1 %s after send_at with %v", time.Since(sendAt).Round(10*time.Millisecond), s.statusCounts(s.org))
	s.waitCounts(s.org, 60*time.Second, "all delivered", func(c map[string]int) bool { return c["delivered"] == n })
	if got := s.networkMessages(s.org); got != n {
		t.Fatalf("the network holds %d messages for %d scheduled: not exactly once", got, n)
	}
	var jobs, used int
	var p50, p99, maxLate float64
	ctx := context.Background()
	if err := s.App.DB.Pool.QueryRow(ctx, `SELECT count(DISTINCT args->>'message_id') FROM river.river_job
		WHERE kind = 'message_delivery' AND args->>'schema' = $1`, s.org.Tenant.Schema).Scan(&jobs); err != nil {
		t.Fatal(err)
	}
	if err := s.App.DB.Pool.QueryRow(ctx, `SELECT coalesce(sum(used), 0) FROM `+s.org.Tenant.Table("daily_usage")+
		` WHERE side = 'accept'`).Scan(&used); err != nil {
		t.Fatal(err)
	}
	if jobs != n || used != n {
		t.Fatalf("%d messages with a delivery job and %d counted for %d messages", jobs, used, n)
	}
	// The worker processes run on the real clock: a message's created_at
	// is its release time.
	if err := s.App.DB.Pool.QueryRow(ctx, `SELECT
		percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM created_at - send_at)),
		percentile_cont(0.99) WITHIN GROUP (ORDER BY extract(epoch FROM created_at - send_at)),
		max(extract(epoch FROM created_at - send_at))
		FROM `+s.org.Tenant.Table("messages")).Scan(&p50, &p99, &maxLate); err != nil {
		t.Fatal(err)
	}
	t.Logf("release after send_at: p50 %.2f s, p99 %.2f s, max %.2f s", p50, p99, maxLate)
	var early int
	if err := s.App.DB.Pool.QueryRow(ctx, `SELECT count(*) FROM `+s.org.Tenant.Table("messages")+
		` WHERE created_at < send_at`).Scan(&early); err != nil {
		t.Fatal(err)
	}
	if early != 0 {
		t.Fatalf("%d messages released before their send_at", early)
	}
}
