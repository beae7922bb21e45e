package integration

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/bizmsg/platform/platform/network"
	"github.com/bizmsg/platform/platform/templates"
)

// docs/api.md, §Scheduled sends: the rules of scheduling a template send
// and of the checks at release that scheduled_test.go leaves out.

// scheduledTemplate is the body of a template send from sender id to p
// with vars, due at sendAt.
func scheduledTemplate(id int64, p, name, language string, vars map[string]string, sendAt time.Time) map[string]any {
	b := templateSend(id, p, name, language, vars)
	b["send_at"] = at(sendAt)
	return b
}

// wantFailedAtRelease checks that message id failed at its release with
// code: error_code, error_message and failed_at set, no recipient_user_id.
func (e *msgEnv) wantFailedAtRelease(org *Org, id int64, code string) {
	e.t.Helper()
	r := e.Do(Request{Method: http.MethodGet, Path: fmt.Sprintf("%s/%d", messagesPath, id), Header: org.Key()})
	var body struct {
		Data map[string]any `json:"data"`
	}
	r.JSON(e.t, &body)
	m := body.Data
	if r.Status != http.StatusOK || m["status"] != "failed" || m["error_code"] != code || m["error_message"] == nil ||
		m["error_message"] == "" || m["failed_at"] == nil || m["send_at"] == nil {
		e.t.Fatalf("message %d after a release refused with %s: %d %s", id, code, r.Status, r.Body)
	}
}

// A scheduled template send: scheduling checks the template exists (in any
// status) and that the variables fill it, and answers the text rendered
// then; the release renders the template again from the stored name,
// language and variables and delivers that text. A template deleted, or
// no longer approved, between scheduling and release fails the message
// with template_not_found or template_not_approved and message.failed,
// counting nothing.
func TestScheduledTemplateSend(t *testing.T) {
	t.Parallel()
	e := startMsg(t, Options{Workers: true, Env: map[string]string{"WEBHOOK_ALLOW_PRIVATE": "true"}})
	org := e.Register(t)
	key := org.Key()
	rcv := newReceiver(t)
	createWebhook(t, e.Env, key, map[string]any{"url": rcv.srv.URL, "events": []string{"message.failed"}})
	sid := e.activeSender(org, phoneN(1))
	for i := 10; i < 14; i++ {
		e.recipient(phoneN(i))
	}
	named := func(name, category, body string, examples map[string]string) template {
		return createTemplate(t, e.Env, key, map[string]any{"name": name, "language": "en", "category": category,
			"body": body, "examples": examples})
	}
	order := createTemplate(t, e.Env, key, templateBody("order_update", "en_US"))
	gone := named("gone", "utility", "Hi {{1}}, this one goes away.", map[string]string{"1": "Ana"})
	paused := named("held", "utility", "Hi {{1}}, this one is paused.", map[string]string{"1": "Ana"})
	// The built-in network rejects an authentication template whose code
	// is not said to be one: scheduling takes a template in any status.
	rejected := named("code", "authentication", "{{1}} is your code.", map[string]string{"1": "123"})
	for _, tpl := range []template{order, gone, paused} {
		if got := reviewed(t, e.Env, key, tpl.ID); got.Status != "approved" {
			t.Fatalf("template %s is %s", tpl.Name, got.Status)
		}
	}
	if got := reviewed(t, e.Env, key, rejected.ID); got.Status != "rejected" {
		t.Fatalf("template %s is %s", rejected.Name, got.Status)
	}

	// Scheduling: the variables must fill the template, as a send's.
	later := e.Clock.Now().Add(time.Hour)
	r := e.send(org, scheduledTemplate(sid, phoneN(10), "order_update", "en_US", map[string]string{"1": "B-9"}, later))
	if errs := fieldErrors(t, r); len(errs["template.variables.2"]) == 0 {
		t.Fatalf("a missing variable: errors %v", errs)
	}
	wantError(t, e.send(org, scheduledTemplate(sid, phoneN(10), "nope", "en", nil, later)),
		http.StatusUnprocessableEntity, templates.CodeTemplateNotFound)

	sendAt := dueIn(5 * time.Second)
	want := "Order B-9\n\nHello Ana, your order ships today.\n\nReply STOP to opt out"
	ok := e.mustSchedule(org, scheduledTemplate(sid, phoneN(10), "order_update", "en_US", map[string]string{"1": "B-9", "2": "Ana"}, sendAt))
	if ok.Content != want || ok.MessageType != "template" {
		t.Fatalf("scheduled template send %+v: want the text rendered at scheduling", ok)
	}
	deleted := e.mustSchedule(org, scheduledTemplate(sid, phoneN(11), "gone", "en", map[string]string{"1": "Bo"}, sendAt))
	unapproved := e.mustSchedule(org, scheduledTemplate(sid, phoneN(12), "held", "en", map[string]string{"1": "Cy"}, sendAt))
	fromRejected := e.mustSchedule(org, scheduledTemplate(sid, phoneN(13), "code", "en", map[string]string{"1": "77"}, sendAt))

	// Between scheduling and release: one template deleted, one paused.
	if r := e.Do(Request{Method: http.MethodDelete, Path: fmt.Sprintf("%s/%d", templatesPath, gone.ID), Header: key}); r.Status != http.StatusNoContent {
		t.Fatalf("delete template = %d %s", r.Status, r.Body)
	}
	if _, _, err := e.App.Templates.SetStatus(context.Background(), org.Tenant, paused.ID, templates.StatusPaused, ""); err != nil {
		t.Fatal(err)
	}
	if left := time.Until(sendAt); left <= 0 {
		t.Fatalf("the templates changed %s after the send_at; the machine is too slow for this test", -left)
	}

	codes := failedHooks(t, rcv, 3)
	wantCodes := map[int64]string{deleted.ID: templates.CodeTemplateNotFound, unapproved.ID: templates.CodeTemplateNotApproved,
		fromRejected.ID: templates.CodeTemplateNotApproved}
	for id, code := range wantCodes {
		if codes[id] != code {
			t.Fatalf("message.failed codes %v, want %v", codes, wantCodes)
		}
		e.wantFailedAtRelease(org, id, code)
	}
	got := e.waitStatus(org, ok.ID, "delivered", 30*time.Second)
	if got.Content != want || got.RecipientUserID == nil {
		t.Fatalf("released template send %+v", got)
	}
	if r := e.Do(Request{Method: http.MethodGet, Path: fmt.Sprintf("%s/%d", messagesPath, ok.ID), Header: key}); templateID(t, r) != float64(order.ID) {
		t.Fatalf("released template send %s: want template_id %d", r.Body, order.ID)
	}
	if inbox := e.inboxFrom(phoneN(10), phoneN(1)); len(inbox) != 1 || inbox[0] != want {
		t.Fatalf("the recipient's inbox %q, want the rendered template", inbox)
	}
	e.wantSent(org, sid, 1)
}

// The checks at release that need no template, each after a scheduling
// that did not make them: a sender that is not active (registered without
// its code: sender_not_active) or whose owner is not verified
// (sender_owner_unverified), a recipient with no account on the network
// (recipient_unreachable), and the service window (outside_service_window
// for a recipient who never wrote). A message that passes is accepted at
// its release: created_at is the scheduling time until then, the release
// time after. Only a scheduled message is cancelable: an inbound one is
// 409 not_cancelable.
func TestScheduledSendRefusedAtRelease(t *testing.T) {
	t.Parallel()
	e := startMsg(t, Options{Workers: true, Env: map[string]string{
		"WEBHOOK_ALLOW_PRIVATE": "true", "NETWORK_SERVICE_WINDOW": "24h"}})
	org := e.Register(t)
	rcv := newReceiver(t)
	createWebhook(t, e.Env, org.Key(), map[string]any{"url": rcv.srv.URL, "events": []string{"message.failed"}})
	active := e.activeSender(org, phoneN(1))
	pending := phoneN(2) // registered, code not entered
	e.account(accountSpec(pending))
	pendingID := e.registerSender(org, pending)
	ownerUnverifiedID := e.ownerUnverifiedSender(org, phoneN(3))
	wrote, cold, nobody := phoneN(10), phoneN(11), phoneN(12)
	e.recipient(wrote)
	e.recipient(cold)
	e.writeTo(org, wrote, phoneN(1), "is my order ready?")

	scheduledAt := e.Clock.Now()
	sendAt := dueIn(4 * time.Second)
	passes := e.mustSchedule(org, scheduled(active, wrote, "yes, it is", sendAt))
	refused := map[int64]string{
		e.mustSchedule(org, scheduled(pendingID, wrote, "a", sendAt)).ID:         "sender_not_active",
		e.mustSchedule(org, scheduled(ownerUnverifiedID, wrote, "b", sendAt)).ID: "sender_owner_unverified",
		e.mustSchedule(org, scheduled(active, nobody, "c", sendAt)).ID:           "recipient_unreachable",
		e.mustSchedule(org, scheduled(active, cold, "d", sendAt)).ID:             "outside_service_window",
	}
	if passes.CreatedAt != at(scheduledAt) {
		t.Fatalf("a scheduled message's created_at %s, want its scheduling time %s", passes.CreatedAt, at(scheduledAt))
	}
	// The service's time of the release is a minute after the scheduling.
	releasedAt := e.Clock.Advance(time.Minute)

	codes := failedHooks(t, rcv, len(refused))
	for id, code := range refused {
		if codes[id] != code {
			t.Fatalf("message.failed codes %v, want %v", codes, refused)
		}
		e.wantFailedAtRelease(org, id, code)
	}
	got := e.waitStatus(org, passes.ID, "delivered", 30*time.Second)
	if got.CreatedAt != at(releasedAt) || got.RecipientUserID == nil {
		t.Fatalf("released message %+v: want created_at %s, the release time", got, at(releasedAt))
	}
	if n := e.acceptCounter(org, active, releasedAt); n != 1 {
		t.Fatalf("accept counter %d, want 1", n)
	}

	// An inbound message is not cancelable.
	var inbound int64
	if err := e.App.DB.Pool.QueryRow(context.Background(), `SELECT id FROM `+org.Tenant.Table("messages")+
		` WHERE direction = 'inbound'`).Scan(&inbound); err != nil {
		t.Fatal(err)
	}
	wantError(t, e.cancel(org, inbound), http.StatusConflict, "not_cancelable")
}

// A release that meets a fault (here the network's lookup failing) is not
// a refusal: the message stays scheduled and the release job retries it,
// and the retry after the network recovers releases it. On the release's
// last attempt a fault fails the message instead, with network_error and

// startFlakyRelease starts an environment with workers whose network can
// be made to fail (flakyNetwork), an organization with a receiver of its
// message.failed webhooks, an active sender and the recipient phoneN(10).
func startFlakyRelease(t *testing.T) (*msgEnv, *flakyNetwork, *Org, *receiver, int64) {
	t.Helper()
	flaky := &flakyNetwork{}
	e := startMsg(t, Options{Workers: true, Env: map[string]string{"WEBHOOK_ALLOW_PRIVATE": "true"},
		Network: func(base network.Network) network.Network { flaky.Network = base; return flaky }})
	org := e.Register(t)
	rcv := newReceiver(t)
	createWebhook(t, e.Env, org.Key(), map[string]any{"url": rcv.srv.URL, "events": []string{"message.failed"}})
	sid := e.activeSender(org, phoneN(1))
	e.recipient(phoneN(10))
	return e, flaky, org, rcv, sid
}

// message.failed, so that none waits as scheduled with no release to come.
func TestScheduledReleaseAfterFault(t *testing.T) {
	t.Parallel()
	e, flaky, org, rcv, sid := startFlakyRelease(t)
	ctx := context.Background()

	flaky.lookupsFailing.Store(true)
	retried := e.mustSchedule(org, scheduled(sid, phoneN(10), "after the fault", dueIn(3*time.Second)))
	e.waitMoved(org)
	poll(t, 30*time.Second, func() (bool, string) {
		var (
			state    string
			failures int
		)
		if err := e.App.DB.Pool.QueryRow(ctx, `SELECT state::text, coalesce(array_length(errors, 1), 0) FROM river.river_job
			WHERE kind = 'message_release' AND (args->>'message_id')::bigint = $1`, retried.ID).Scan(&state, &failures); err != nil {
			t.Fatal(err)
		}
		return failures > 0, fmt.Sprintf("release job %s with %d errors", state, failures)
	})
	if got := e.getScheduled(org, retried.ID); got.Status != "scheduled" {
		t.Fatalf("after a release that met a fault the message is %s, want scheduled", got.Status)
	}
	flaky.lookupsFailing.Store(false)
	e.waitStatus(org, retried.ID, "delivered", 30*time.Second)

	// The last attempt (the worker's call with last set, as River's tenth
	// attempt makes it, hours of backoff from here).
	last := e.mustSchedule(org, scheduled(sid, phoneN(10), "never", dueIn(time.Hour)))
	flaky.lookupsFailing.Store(true)
	if _, err := e.App.Acceptance.ReleaseScheduled(ctx, org.Tenant, last.ID, false); err == nil {
		t.Fatal("a release that met a fault before its last attempt returned no error")
	}
	if got := e.getScheduled(org, last.ID); got.Status != "scheduled" {
		t.Fatalf("after an attempt that met a fault the message is %s, want scheduled", got.Status)
	}
	if status, err := e.App.Acceptance.ReleaseScheduled(ctx, org.Tenant, last.ID, true); err != nil || status != "failed" {
		t.Fatalf("the last attempt = %q, %v; want failed", status, err)
	}
	flaky.lookupsFailing.Store(false)
	if codes := failedHooks(t, rcv, 1); codes[last.ID] != "network_error" {
		t.Fatalf("message.failed codes %v, want network_error for %d", codes, last.ID)
	}
	e.wantFailedAtRelease(org, last.ID, "network_error")
	e.wantSent(org, sid, 1)
}

// A release whose attempts all meet a fault, through River's own attempts
// (not a call that says "last"): the network's lookup fails at the
// release job's every run, and its last run fails the message with
// network_error and one message.failed, having counted nothing and
// queued no delivery; the job ends there (completed, not discarded with
// the message left scheduled). The job's max_attempts is lowered to 2 in
// River, so that its attempts run out within a second of backoff, not
// hours.
func TestScheduledReleaseAttemptsRunOut(t *testing.T) {
	t.Parallel()
	e, flaky, org, rcv, sid := startFlakyRelease(t)
	ctx := context.Background()

	flaky.lookupsFailing.Store(true)
	// Due in 10 s: the job must still be scheduled when its max_attempts is
	// lowered below, which a loaded machine took over 3 s to reach.
	m := e.mustSchedule(org, scheduled(sid, phoneN(10), "never", dueIn(10*time.Second)))
	e.waitMoved(org)
	tag, err := e.App.DB.Pool.Exec(ctx, `UPDATE river.river_job SET max_attempts = 2
		WHERE kind = 'message_release' AND (args->>'message_id')::bigint = $1 AND (args->>'org_id')::bigint = $2
		  AND state = 'scheduled'`, m.ID, org.ID)
	if err != nil {
		t.Fatal(err)
	}
	if tag.RowsAffected() != 1 {
		t.Fatalf("%d scheduled release jobs of message %d before its send_at, want 1 (the machine is too slow for this test?)",
			tag.RowsAffected(), m.ID)
	}

	var (
		state             string
		attempt, failures int
	)
	poll(t, 60*time.Second, func() (bool, string) {
		if err := e.App.DB.Pool.QueryRow(ctx, `SELECT state::text, attempt, coalesce(array_length(errors, 1), 0)
			FROM river.river_job WHERE kind = 'message_release' AND (args->>'message_id')::bigint = $1
			  AND (args->>'org_id')::bigint = $2`, m.ID, org.ID).Scan(&state, &attempt, &failures); err != nil {
			t.Fatal(err)
		}
		return state == "completed" || state == "discarded" || state == "cancelled",
			fmt.Sprintf("release job %s at attempt %d with %d errors", state, attempt, failures)
	})
	if state != "completed" || attempt != 2 || failures != 1 {
		t.Fatalf("release job %s at attempt %d with %d errors, want completed at its last attempt (2) after 1 error",
			state, attempt, failures)
	}
	if codes := failedHooks(t, rcv, 1); len(codes) != 1 || codes[m.ID] != "network_error" {
		t.Fatalf("message.failed codes %v, want network_error for %d", codes, m.ID)
	}
	e.wantFailedAtRelease(org, m.ID, "network_error")
	if all, _ := e.deliveryJobs(org, m.ID); all != 0 {
		t.Fatalf("%d delivery jobs for a message whose release failed", all)
	}

	// One event: a later refusal's message.failed arrives after m's and
	// the receiver holds those two alone.
	flaky.lookupsFailing.Store(false)
	marker := e.mustSchedule(org, scheduled(sid, phoneN(12), "nobody there", dueIn(time.Second)))
	hooks := decodeHooks(t, rcv.until(t, 2, "the marker's message.failed"))
	e.wantFailedAtRelease(org, marker.ID, "recipient_unreachable")
	if len(hooks) != 2 || hooks[0].Data.ID != m.ID || hooks[1].Data.ID != marker.ID {
		t.Fatalf("webhook events %+v, want message %d's then the marker %d's, once each", hooks, m.ID, marker.ID)
	}
	e.wantSent(org, sid, 0)
}
