package integration

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bizmsg/platform/platform/network"
	"github.com/bizmsg/platform/platform/network/builtin"
	"github.com/bizmsg/platform/platform/network/networktest"
)

// Sender-number tests: docs/api.md, §Sender numbers,
// over HTTP with real River workers, the built-in network and the fake clock.

const (
	tenantSenders  = "/api/v1/sender-numbers"
	centralSenders = centralPath + "/sender-numbers"
)

// senderEnv is a running service with workers, a one-second
// account-verification sweep, and the built-in network on its database.
type senderEnv struct {
	*Env
	t   *testing.T
	net *builtin.Network
}

func startSenders(t *testing.T) *senderEnv {
	t.Helper()
	e := Start(t, Options{Workers: true, Env: map[string]string{"SENDER_SWEEP_INTERVAL": "1s"}})
	return &senderEnv{Env: e, t: t, net: networktest.Builtin(t, builtin.Config{DB: e.App.DB, Clock: e.Clock})}
}

// account creates a network account for p, its owner verified or not.
func (e *senderEnv) account(p string, verified bool) {
	e.t.Helper()
	if _, err := e.net.AddAccount(context.Background(), builtin.AccountSpec{
		Phone: p, Verified: verified, PhoneVerified: true, ReceivingEnabled: true,
	}); err != nil {
		e.t.Fatal(err)
	}
}

// sender is the sender-number resource.
type sender struct {
	ID                 int64   `json:"id"`
	Phone              string  `json:"phone"`
	DisplayName        string  `json:"display_name"`
	Status             string  `json:"status"`
	VerificationStatus string  `json:"verification_status"`
	DailyLimitOverride *int    `json:"daily_limit_override"`
	VerifiedAt         *string `json:"verified_at"`
	OTPSentAt          *string `json:"otp_sent_at"`
	CreatedAt          string  `json:"created_at"`
}

// data decodes {"data": sender}.
func senderOf(t *testing.T, r *Response) sender {
	t.Helper()
	var body struct {
		Data sender `json:"data"`
	}
	r.JSON(t, &body)
	return body.Data
}

// register registers p through the Tenant API (201).
func (e *senderEnv) register(org *Org, p string) sender {
	e.t.Helper()
	r := e.Do(Request{Method: http.MethodPost, Path: tenantSenders, Header: org.Key(), Body: map[string]any{"phone": p}})
	if r.Status != http.StatusCreated {
		e.t.Fatalf("register %s = %d %s", p, r.Status, r.Body)
	}
	return senderOf(e.t, r)
}

// get reads a sender through the Central API.
func (e *senderEnv) get(org *Org, id int64) sender {
	e.t.Helper()
	r := e.Do(Request{Method: http.MethodGet, Path: fmt.Sprintf("%s/%d", centralSenders, id), Header: org.Bearer()})
	if r.Status != http.StatusOK {
		e.t.Fatalf("get sender %d = %d %s", id, r.Status, r.Body)
	}
	return senderOf(e.t, r)
}

// verify posts an OTP through the dashboard route.
func (e *senderEnv) verify(org *Org, id int64, otp string) *Response {
	e.t.Helper()
	return e.Do(Request{Method: http.MethodPost, Path: fmt.Sprintf("%s/%d/verify", centralSenders, id),
		Header: org.Bearer(), Body: map[string]any{"otp": otp}})
}

func (e *senderEnv) resend(org *Org, id int64) *Response {
	e.t.Helper()
	return e.Do(Request{Method: http.MethodPost, Path: fmt.Sprintf("%s/%d/resend-otp", centralSenders, id), Header: org.Bearer()})
}

var otpRE = regexp.MustCompile(`code is (\d{6})\.`)

// otp waits for the owner's inbox to hold its n-th OTP message and returns
// the code: the built-in network's inbox is how the owner (and the tests)
// read it.
func (e *senderEnv) otp(p string, n int) string {
	e.t.Helper()
	var msgs []builtin.InboxMessage
	e.eventually(10*time.Second, fmt.Sprintf("OTP message %d for %s", n, p), func() bool {
		all, err := e.net.Inbox(context.Background(), p)
		if err != nil {
			return false
		}
		msgs = slices.DeleteFunc(all, func(m builtin.InboxMessage) bool { return m.FromPhone != builtin.ServicePhone })
		return len(msgs) >= n
	})
	if len(msgs) != n {
		e.t.Fatalf("%s has %d OTP messages, want %d", p, len(msgs), n)
	}
	m := otpRE.FindStringSubmatch(msgs[n-1].Content)
	if m == nil {
		e.t.Fatalf("no code in %q", msgs[n-1].Content)
	}
	return m[1]
}

// eventually polls cond until it holds or timeout passes.
func (e *senderEnv) eventually(timeout time.Duration, what string, cond func() bool) {
	e.t.Helper()
	poll(e.t, timeout, func() (bool, string) { return cond(), "waiting for " + what })
}

// dbNow is the database's clock, River's for its jobs' times.
func (e *senderEnv) dbNow() time.Time {
	e.t.Helper()
	var now time.Time
	if err := e.App.DB.Pool.QueryRow(context.Background(), `SELECT now()`).Scan(&now); err != nil {
		e.t.Fatal(err)
	}
	return now
}

// waitSweeps waits until n account-verification sweeps that began after
// since have finished.
func (e *senderEnv) waitSweeps(since time.Time, n int) {
	e.t.Helper()
	poll(e.t, 30*time.Second, func() (bool, string) {
		var done int
		if err := e.App.DB.Pool.QueryRow(context.Background(), `SELECT count(*) FROM river.river_job
			WHERE kind = 'sender_account_sweep' AND state = 'completed' AND attempted_at > $1`, since).Scan(&done); err != nil {
			e.t.Fatal(err)
		}
		return done >= n, fmt.Sprintf("%d of %d account sweeps finished since %s", done, n, since)
	})
}

// otpJobsDone waits until no OTP job is pending and returns how many
// completed.
func (e *senderEnv) otpJobsDone() int {
	e.t.Helper()
	var pending, done int
	e.eventually(10*time.Second, "OTP jobs to finish", func() bool {
		err := e.App.DB.Pool.QueryRow(context.Background(), `SELECT
			count(*) FILTER (WHERE state NOT IN ('completed', 'cancelled', 'discarded')),
			count(*) FILTER (WHERE state = 'completed')
			FROM river.river_job WHERE kind = 'sender_otp'`).Scan(&pending, &done)
		return err == nil && pending == 0
	})
	return done
}

// wantError checks an error response's status and code.
func wantError(t *testing.T, r *Response, status int, code string) map[string]any {
	t.Helper()
	if r.Status != status {
		t.Fatalf("status %d %s, want %d %s", r.Status, r.Body, status, code)
	}
	m := r.Map(t)
	if m["code"] != code || m["message"] == "" || m["request_id"] == "" {
		t.Fatalf("error body %s, want code %s", r.Body, code)
	}
	return m
}

// login signs the owner in again (the fake clock outlives access tokens).
func (e *senderEnv) login(org *Org) {
	e.t.Helper()
	r := e.Do(Request{Method: http.MethodPost, Path: centralPath + "/login", Body: map[string]any{"email": org.OwnerEmail, "password": org.OwnerPassword}})
	if r.Status != http.StatusOK {
		e.t.Fatalf("login = %d %s", r.Status, r.Body)
	}
	org.AccessToken = r.Map(e.t)["access_token"].(string)
}

func otherCode(code string) string {
	if code == "999999" {
		return "999998"
	}
	return "999999"
}

// member adds a member (role) to org and returns its bearer header.
func (e *senderEnv) member(org *Org, role string) map[string]string {
	e.t.Helper()
	email := uniqueEmail(role)
	r := e.Do(Request{Method: http.MethodPost, Path: usersPath, Header: org.Bearer(), Body: map[string]any{
		"name": "A " + role, "email": email, "role": role, "password": "initial password"}})
	if r.Status != http.StatusCreated {
		e.t.Fatalf("add %s = %d %s", role, r.Status, r.Body)
	}
	r = e.Do(Request{Method: http.MethodPost, Path: centralPath + "/login", Body: map[string]any{"email": email, "password": "initial password"}})
	if r.Status != http.StatusOK {
		e.t.Fatalf("login %s = %d %s", role, r.Status, r.Body)
	}
	return Bearer(r.Map(e.t)["access_token"].(string))
}

// Registration, listing, scopes, the resource's fields, the OTP reaching the
// owner's inbox, and OTP acceptance with a verified owner → active.
func TestSenderRegisterAndActivate(t *testing.T) {
	t.Parallel()
	e := startSenders(t)
	org := e.Register(t)
	const p = "+14155550101"
	e.account(p, true)

	// Invalid input changes nothing.
	for _, tc := range []struct {
		body  any
		field string
	}{
		{map[string]any{}, "phone"},
		{map[string]any{"phone": "4155550101"}, "phone"},
		{map[string]any{"phone": "+1 415"}, "phone"},
		{map[string]any{"phone": 14155550101}, "phone"},
		{map[string]any{"phone": p, "display_name": strings.Repeat("x", 101)}, "display_name"},
	} {
		r := e.Do(Request{Method: http.MethodPost, Path: tenantSenders, Header: org.Key(), Body: tc.body})
		m := wantError(t, r, http.StatusUnprocessableEntity, "validation_failed")
		if errs, _ := m["errors"].(map[string]any); errs[tc.field] == nil {
			t.Fatalf("%v: errors %v, want %s", tc.body, m["errors"], tc.field)
		}
	}

	// Fields a client may not set are ignored.
	r := e.Do(Request{Method: http.MethodPost, Path: tenantSenders, Header: org.Key(), Body: map[string]any{
		"phone": "+1 (415) 555-0101", "display_name": " Support ", "status": "active", "verification_status": "verified",
		"daily_limit_override": 5, "verified_at": "2020-01-01T00:00:00Z"}})
	if r.Status != http.StatusCreated {
		t.Fatalf("register = %d %s", r.Status, r.Body)
	}
	var raw struct {
		Data map[string]any `json:"data"`
	}
	r.JSON(t, &raw)
	keys := make([]string, 0, len(raw.Data))
	for k := range raw.Data {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	if want := []string{"created_at", "daily_limit_override", "display_name", "id", "otp_sent_at", "phone", "status", "verification_status", "verified_at"}; !slices.Equal(keys, want) {
		t.Fatalf("sender fields %v, want %v", keys, want)
	}
	s := senderOf(t, r)
	if s.Phone != p || s.DisplayName != "Support" || s.Status != "pending_verification" || s.VerificationStatus != "pending_verification" ||
		s.DailyLimitOverride != nil || s.VerifiedAt != nil || s.ID <= 0 {
		t.Fatalf("registered %+v", s)
	}
	if _, err := time.Parse(time.RFC3339, s.CreatedAt); err != nil || !strings.HasSuffix(s.CreatedAt, "Z") {
		t.Fatalf("created_at %q", s.CreatedAt)
	}

	// A phone is registered once per organization.
	r = e.Do(Request{Method: http.MethodPost, Path: tenantSenders, Header: org.Key(), Body: map[string]any{"phone": "+14155550101"}})
	wantError(t, r, http.StatusConflict, "sender_number_exists")

	// Scopes: messages.send registers; messages.send or messages.read lists.
	readKey := KeyHeader(e.APIKey(t, org, "messages.read"))
	lookupKey := KeyHeader(e.APIKey(t, org, "contacts.lookup"))
	sendKey := KeyHeader(e.APIKey(t, org, "messages.send"))
	r = e.Do(Request{Method: http.MethodPost, Path: tenantSenders, Header: readKey, Body: map[string]any{"phone": "+14155550102"}})
	wantError(t, r, http.StatusForbidden, "insufficient_scope")
	r = e.Do(Request{Method: http.MethodGet, Path: tenantSenders, Header: lookupKey})
	wantError(t, r, http.StatusForbidden, "insufficient_scope")
	r = e.Do(Request{Method: http.MethodGet, Path: tenantSenders})
	if r.Status != http.StatusUnauthorized {
		t.Fatalf("no key = %d", r.Status)
	}
	second := e.Do(Request{Method: http.MethodPost, Path: tenantSenders, Header: sendKey, Body: map[string]any{"phone": "+14155550102"}})
	if second.Status != http.StatusCreated {
		t.Fatalf("register with messages.send = %d %s", second.Status, second.Body)
	}
	for _, k := range []map[string]string{readKey, sendKey} {
		r = e.Do(Request{Method: http.MethodGet, Path: tenantSenders, Header: k})
		var list struct {
			Data []sender `json:"data"`
		}
		r.JSON(t, &list)
		if r.Status != http.StatusOK || len(list.Data) != 2 || list.Data[0].Phone != "+14155550102" || list.Data[1].ID != s.ID {
			t.Fatalf("list = %d %s", r.Status, r.Body)
		}
	}

	// The OTP reaches the owner's inbox; otp_sent_at tells.
	code := e.otp(p, 1)
	e.eventually(5*time.Second, "otp_sent_at", func() bool { return e.get(org, s.ID).OTPSentAt != nil })
	msgs, err := e.net.Inbox(context.Background(), p)
	if err != nil || !strings.Contains(msgs[0].Content, org.Name) || !strings.Contains(msgs[0].Content, "sender number") {
		t.Fatalf("otp message %+v %v", msgs, err)
	}

	// Dashboard: a wrong code, malformed codes, then the right one → active.
	wantError(t, e.verify(org, s.ID, otherCode(code)), http.StatusUnprocessableEntity, "otp_invalid")
	for _, bad := range []any{"12345", "abcdef", 123456, nil} {
		r := e.Do(Request{Method: http.MethodPost, Path: fmt.Sprintf("%s/%d/verify", centralSenders, s.ID), Header: org.Bearer(), Body: map[string]any{"otp": bad}})
		wantError(t, r, http.StatusUnprocessableEntity, "validation_failed")
	}
	e.Clock.Advance(2 * time.Minute)
	r = e.verify(org, s.ID, code)
	if r.Status != http.StatusOK {
		t.Fatalf("verify = %d %s", r.Status, r.Body)
	}
	v := senderOf(t, r)
	if v.Status != "active" || v.VerificationStatus != "verified" || v.VerifiedAt == nil ||
		*v.VerifiedAt != e.Clock.Now().UTC().Truncate(time.Second).Format(time.RFC3339) {
		t.Fatalf("verified %+v (now %s)", v, e.Clock.Now())
	}
	wantError(t, e.verify(org, s.ID, code), http.StatusUnprocessableEntity, "sender_not_pending_verification")
	wantError(t, e.resend(org, s.ID), http.StatusUnprocessableEntity, "sender_not_pending_verification")

	// Another organization cannot see or verify it.
	other := e.Register(t)
	r = e.Do(Request{Method: http.MethodGet, Path: fmt.Sprintf("%s/%d", centralSenders, s.ID), Header: other.Bearer()})
	wantError(t, r, http.StatusNotFound, "not_found")
	wantError(t, e.verify(other, s.ID, code), http.StatusNotFound, "not_found")
	r = e.Do(Request{Method: http.MethodGet, Path: tenantSenders, Header: other.Key()})
	if r.Status != http.StatusOK || string(r.Body) != `{"data":[],"next_cursor":null}` {
		t.Fatalf("other org list = %d %s", r.Status, r.Body)
	}
}

// daily_limit_override: owners and admins through the Central API only.
func TestSenderDailyLimitOverride(t *testing.T) {
	t.Parallel()
	e := startSenders(t)
	org := e.Register(t)
	s := e.register(org, "+14155550111")
	path := fmt.Sprintf("%s/%d", centralSenders, s.ID)
	patch := func(as map[string]string, body any) *Response {
		return e.Do(Request{Method: http.MethodPatch, Path: path, Header: as, Body: body})
	}
	member, admin := e.member(org, "member"), e.member(org, "admin")

	wantError(t, patch(member, map[string]any{"daily_limit_override": 10}), http.StatusForbidden, "insufficient_role")
	wantError(t, patch(member, map[string]any{"daily_limit_override": nil}), http.StatusForbidden, "insufficient_role")
	r := patch(member, map[string]any{"display_name": "Sales"})
	if got := senderOf(t, r); r.Status != http.StatusOK || got.DisplayName != "Sales" || got.DailyLimitOverride != nil {
		t.Fatalf("member rename = %d %s", r.Status, r.Body)
	}
	for _, bad := range []any{0, -5, 1.5, "100", 2_000_000_000} {
		r := patch(admin, map[string]any{"daily_limit_override": bad})
		m := wantError(t, r, http.StatusUnprocessableEntity, "validation_failed")
		if errs, _ := m["errors"].(map[string]any); errs["daily_limit_override"] == nil {
			t.Fatalf("%v: %s", bad, r.Body)
		}
	}
	r = patch(admin, map[string]any{"daily_limit_override": 500})
	if got := senderOf(t, r); r.Status != http.StatusOK || got.DailyLimitOverride == nil || *got.DailyLimitOverride != 500 || got.DisplayName != "Sales" {
		t.Fatalf("admin limit = %d %s", r.Status, r.Body)
	}
	r = patch(org.Bearer(), map[string]any{"daily_limit_override": nil})
	if got := senderOf(t, r); r.Status != http.StatusOK || got.DailyLimitOverride != nil {
		t.Fatalf("owner clear = %d %s", r.Status, r.Body)
	}
	// The Tenant API can neither set it at registration nor patch it.
	r = e.Do(Request{Method: http.MethodPatch, Path: fmt.Sprintf("%s/%d", tenantSenders, s.ID), Header: org.Key(), Body: map[string]any{"daily_limit_override": 5}})
	if r.Status != http.StatusNotFound && r.Status != http.StatusMethodNotAllowed {
		t.Fatalf("tenant PATCH = %d %s", r.Status, r.Body)
	}
	r = e.Do(Request{Method: http.MethodPost, Path: tenantSenders, Header: org.Key(), Body: map[string]any{"phone": "+14155550112", "daily_limit_override": 5}})
	if got := senderOf(t, r); r.Status != http.StatusCreated || got.DailyLimitOverride != nil {
		t.Fatalf("tenant register with limit = %d %s", r.Status, r.Body)
	}
	// Members register and list through the dashboard too.
	r = e.Do(Request{Method: http.MethodPost, Path: centralSenders, Header: member, Body: map[string]any{"phone": "+14155550113", "daily_limit_override": 5}})
	if got := senderOf(t, r); r.Status != http.StatusCreated || got.DailyLimitOverride != nil || got.Status != "pending_verification" {
		t.Fatalf("central register = %d %s", r.Status, r.Body)
	}
	r = e.Do(Request{Method: http.MethodGet, Path: centralSenders, Header: member})
	var list struct {
		Data []sender `json:"data"`
	}
	r.JSON(t, &list)
	if r.Status != http.StatusOK || len(list.Data) != 3 {
		t.Fatalf("central list = %d %s", r.Status, r.Body)
	}
	r = e.Do(Request{Method: http.MethodGet, Path: centralSenders})
	if r.Status != http.StatusUnauthorized {
		t.Fatalf("central list without a token = %d", r.Status)
	}
}

// OTP accepted with an unverified owner → pending_account_verification, then
// active on its own once the owner is verified (platform network
// verify-account), by the first sweep after that; no new OTP.
func TestSenderActivatesWhenOwnerVerified(t *testing.T) {
	t.Parallel()
	e := startSenders(t)
	org := e.Register(t)
	const p = "+14155550121"
	e.account(p, false)
	s := e.register(org, p)
	r := e.verify(org, s.ID, e.otp(p, 1))
	v := senderOf(t, r)
	if r.Status != http.StatusOK || v.Status != "pending_account_verification" || v.VerificationStatus != "verified" || v.VerifiedAt == nil {
		t.Fatalf("verify = %d %s", r.Status, r.Body)
	}
	// Two sweeps run; the owner is still unverified.
	e.waitSweeps(e.dbNow(), 2)
	if got := e.get(org, s.ID); got.Status != "pending_account_verification" {
		t.Fatalf("before owner verification: %+v", got)
	}
	// The operator command verifies the owner's account; the first sweep
	// that starts after it activates the number.
	out, err := runPlatform(t, e.DatabaseURL, "network", "verify-account", "--phone", p)
	if err != nil {
		t.Fatalf("verify-account: %v\n%s", err, out)
	}
	e.waitSweeps(e.dbNow(), 1)
	if got := e.get(org, s.ID); got.Status != "active" {
		t.Fatalf("after a sweep that began once the owner was verified: %+v, want active", got)
	}
	if n := e.otpJobsDone(); n != 1 {
		t.Fatalf("%d OTP jobs, want 1 (no new OTP)", n)
	}
	if msgs, _ := e.net.Inbox(context.Background(), p); len(msgs) != 1 {
		t.Fatalf("inbox has %d messages, want the one OTP", len(msgs))
	}
}

// OTP limits: 5 wrong tries, resend cooldown (429 + Retry-After), expiry
// after 10 minutes of the platform clock.
func TestSenderOTPLimits(t *testing.T) {
	t.Parallel()
	e := startSenders(t)
	org := e.Register(t)
	const p = "+14155550131"
	e.account(p, true)
	s := e.register(org, p)
	code := e.otp(p, 1)

	for i := 1; i <= 5; i++ {
		m := wantError(t, e.verify(org, s.ID, otherCode(code)), http.StatusUnprocessableEntity, "otp_invalid")
		if m["attempts_remaining"] != float64(5-i) {
			t.Fatalf("attempt %d: %v", i, m)
		}
	}
	wantError(t, e.verify(org, s.ID, code), http.StatusUnprocessableEntity, "otp_attempts_exceeded")

	r := e.resend(org, s.ID)
	wantError(t, r, http.StatusTooManyRequests, "otp_resend_too_soon")
	if ra, err := strconv.Atoi(r.Header.Get("Retry-After")); err != nil || ra < 1 || ra > 60 {
		t.Fatalf("Retry-After %q", r.Header.Get("Retry-After"))
	}
	e.Clock.Advance(61 * time.Second)
	r = e.resend(org, s.ID)
	if got := senderOf(t, r); r.Status != http.StatusOK || got.Status != "pending_verification" || got.OTPSentAt != nil {
		t.Fatalf("resend = %d %s", r.Status, r.Body)
	}
	wantError(t, e.resend(org, s.ID), http.StatusTooManyRequests, "otp_resend_too_soon")
	fresh := e.otp(p, 2)
	if fresh != code {
		wantError(t, e.verify(org, s.ID, code), http.StatusUnprocessableEntity, "otp_invalid")
	}

	// Expired after 10 minutes: a resend is needed.
	e.Clock.Advance(10 * time.Minute)
	wantError(t, e.verify(org, s.ID, fresh), http.StatusUnprocessableEntity, "otp_expired")
	if r := e.resend(org, s.ID); r.Status != http.StatusOK {
		t.Fatalf("resend after expiry = %d %s", r.Status, r.Body)
	}
	third := e.otp(p, 3)
	e.Clock.Advance(9 * time.Minute)
	e.login(org) // access tokens live 15 minutes of the same clock
	r = e.verify(org, s.ID, third)
	if got := senderOf(t, r); r.Status != http.StatusOK || got.Status != "active" {
		t.Fatalf("verify third code = %d %s", r.Status, r.Body)
	}
	// Three codes, three messages: no job sent twice.
	if n := e.otpJobsDone(); n != 3 {
		t.Fatalf("%d OTP jobs completed, want 3", n)
	}
	if msgs, _ := e.net.Inbox(context.Background(), p); len(msgs) != 3 {
		t.Fatalf("inbox has %d messages, want 3", len(msgs))
	}
}

// No network account: the OTP job sends nothing; once the account exists a
// resend delivers and the code works.
func TestSenderOTPWithoutNetworkAccount(t *testing.T) {
	t.Parallel()
	e := startSenders(t)
	org := e.Register(t)
	const p = "+14155550141"
	s := e.register(org, p)
	if n := e.otpJobsDone(); n != 1 {
		t.Fatalf("%d OTP jobs completed, want 1", n)
	}
	if got := e.get(org, s.ID); got.OTPSentAt != nil || got.Status != "pending_verification" {
		t.Fatalf("without an account: %+v", got)
	}
	if _, err := e.net.Inbox(context.Background(), p); !errors.Is(err, network.ErrNotFound) {
		t.Fatalf("inbox without an account: %v", err)
	}

	e.account(p, true)
	e.Clock.Advance(time.Minute)
	if r := e.resend(org, s.ID); r.Status != http.StatusOK {
		t.Fatalf("resend = %d %s", r.Status, r.Body)
	}
	code := e.otp(p, 1)
	e.eventually(5*time.Second, "otp_sent_at", func() bool { return e.get(org, s.ID).OTPSentAt != nil })
	r := e.verify(org, s.ID, code)
	if got := senderOf(t, r); r.Status != http.StatusOK || got.Status != "active" {
		t.Fatalf("verify = %d %s", r.Status, r.Body)
	}
}

// A phone is active in at most one organization; concurrent verifications
// activate once; operator suspend, unsuspend and reject (the CLI, --json).
func TestSenderAcrossOrganizationsAndOperator(t *testing.T) {
	t.Parallel()
	e := startSenders(t)
	a, b := e.Register(t), e.Register(t)
	const p = "+14155550151"
	e.account(p, true)
	sa := e.register(a, p)
	codeA := e.otp(p, 1)
	sb := e.register(b, p)
	codeB := e.otp(p, 2)

	// Ten concurrent verifications with the right code: one activation.
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		statuses []int
	)
	for range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := e.Send(Request{Method: http.MethodPost, Path: fmt.Sprintf("%s/%d/verify", centralSenders, sa.ID),
				Header: a.Bearer(), Body: map[string]any{"otp": codeA}})
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			statuses = append(statuses, r.Status)
			mu.Unlock()
		}()
	}
	wg.Wait()
	slices.Sort(statuses)
	if want := append([]int{http.StatusOK}, slices.Repeat([]int{http.StatusUnprocessableEntity}, 9)...); !slices.Equal(statuses, want) {
		t.Fatalf("concurrent verify statuses %v", statuses)
	}

	// B cannot activate the phone while A holds it; B stays as it was.
	wantError(t, e.verify(b, sb.ID, codeB), http.StatusConflict, "phone_active_elsewhere")
	if got := e.get(b, sb.ID); got.Status != "pending_verification" || got.VerificationStatus != "pending_verification" {
		t.Fatalf("b after 409: %+v", got)
	}

	admin := func(args ...string) map[string]any {
		t.Helper()
		out, err := runPlatform(t, e.DatabaseURL, append([]string{"admin", "sender"}, args...)...)
		if err != nil {
			t.Fatalf("admin sender %v: %v\n%s", args, err, out)
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(out), &m); err != nil {
			t.Fatalf("admin sender %v output %q: %v", args, out, err)
		}
		return m
	}
	orgFlag := func(o *Org) string { return strconv.FormatInt(o.ID, 10) }

	// Without --org the phone is ambiguous.
	if out, err := runPlatform(t, e.DatabaseURL, "admin", "sender", "suspend", "--phone", p, "--json"); err == nil || !strings.Contains(out, "--org") {
		t.Fatalf("ambiguous suspend: %v %s", err, out)
	}
	// Suspended: not active, and shown so in both APIs.
	m := admin("suspend", "--phone", p, "--org", orgFlag(a), "--json")
	if m["previous_status"] != "active" || m["organization_id"] != float64(a.ID) || m["sender"].(map[string]any)["status"] != "suspended" {
		t.Fatalf("suspend --json = %v", m)
	}
	if got := e.get(a, sa.ID); got.Status != "suspended" {
		t.Fatalf("after suspend: %+v", got)
	}
	wantError(t, e.verify(a, sa.ID, codeA), http.StatusUnprocessableEntity, "sender_not_pending_verification")
	// A suspended number keeps the phone.
	wantError(t, e.verify(b, sb.ID, codeB), http.StatusConflict, "phone_active_elsewhere")
	// Unsuspend: the facts (OTP accepted, owner verified) give active.
	if m := admin("unsuspend", "--phone", p, "--org", orgFlag(a), "--json"); m["sender"].(map[string]any)["status"] != "active" {
		t.Fatalf("unsuspend --json = %v", m)
	}
	m = admin("set-limit", "--phone", p, "--org", orgFlag(a), "--limit", "42", "--json")
	if m["sender"].(map[string]any)["daily_limit_override"] != float64(42) {
		t.Fatalf("set-limit --json = %v", m)
	}
	r := e.Do(Request{Method: http.MethodGet, Path: tenantSenders, Header: a.Key()})
	if !strings.Contains(string(r.Body), `"daily_limit_override":42`) {
		t.Fatalf("tenant list after set-limit: %s", r.Body)
	}
	// Rejected is final, and frees the phone for B.
	if m := admin("reject", "--phone", p, "--org", orgFlag(a), "--json"); m["sender"].(map[string]any)["status"] != "rejected" {
		t.Fatalf("reject --json = %v", m)
	}
	for _, cmd := range []string{"unsuspend", "suspend"} {
		if out, err := runPlatform(t, e.DatabaseURL, "admin", "sender", cmd, "--phone", p, "--org", orgFlag(a)); err == nil || !strings.Contains(out, "final") {
			t.Fatalf("%s after reject: %v %s", cmd, err, out)
		}
	}
	wantError(t, e.resend(a, sa.ID), http.StatusUnprocessableEntity, "sender_not_pending_verification")
	r = e.verify(b, sb.ID, codeB)
	if got := senderOf(t, r); r.Status != http.StatusOK || got.Status != "active" {
		t.Fatalf("b verify after reject = %d %s", r.Status, r.Body)
	}
}

// runPlatform runs the platform binary on dbURL and returns its standard
// output, or its standard error with the error.
func runPlatform(t *testing.T, dbURL string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), platformBinary(t), args...)
	cmd.Env = append(os.Environ(), "DATABASE_URL="+dbURL, "LOG_LEVEL=warn")
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stderr.String(), err
	}
	return stdout.String(), nil
}
