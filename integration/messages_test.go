package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/messages"
	"github.com/bizmsg/platform/platform/network"
	"github.com/bizmsg/platform/platform/network/builtin"
	"github.com/bizmsg/platform/platform/network/networktest"
	"github.com/bizmsg/platform/platform/queue"
	"github.com/bizmsg/platform/platform/senders"
)

// Messaging tests: docs/api.md, §Messages, lookup and usage, over
// HTTP, with the built-in network and (where delivery matters) real River
// workers. Helpers shared by lookup_test.go, usage_test.go and
// delivery_test.go live here.

const (
	messagesPath = "/api/v1/messages"
	lookupPath   = "/api/v1/contacts/lookup"
	usagePath    = "/api/v1/usage"
)

// msgEnv is a running service with the built-in network on its database.
type msgEnv struct {
	*Env
	t   *testing.T
	net *builtin.Network
}

func startMsg(t *testing.T, opts Options) *msgEnv {
	t.Helper()
	e := Start(t, opts)
	return &msgEnv{Env: e, t: t, net: networktest.Builtin(t, builtin.Config{DB: e.App.DB, Clock: e.Clock})}
}

// phoneN is the n-th test phone; every test has a database (and network) of
// its own, so tests may reuse numbers.
func phoneN(n int) string { return fmt.Sprintf("+1415555%04d", n) }

// accountSpec is a network account in the default state: owner verified,
// phone verified, receiving.
func accountSpec(p string) builtin.AccountSpec {
	return builtin.AccountSpec{Phone: p, Verified: true, PhoneVerified: true, ReceivingEnabled: true}
}

// account creates or updates a network account.
func (e *msgEnv) account(spec builtin.AccountSpec) int64 {
	e.t.Helper()
	a, err := e.net.AddAccount(context.Background(), spec)
	if err != nil {
		e.t.Fatal(err)
	}
	return a.ID
}

// recipient creates a reachable recipient account and returns its id.
func (e *msgEnv) recipient(p string) int64 { return e.account(accountSpec(p)) }

// registerSender registers p as a sender number of org (pending_verification).
func (e *msgEnv) registerSender(org *Org, p string) int64 {
	e.t.Helper()
	r := e.Do(Request{Method: http.MethodPost, Path: "/api/v1/sender-numbers", Header: org.Key(), Body: map[string]any{"phone": p}})
	if r.Status != http.StatusCreated {
		e.t.Fatalf("register sender %s = %d %s", p, r.Status, r.Body)
	}
	var body struct {
		Data struct {
			ID int64 `json:"id"`
		} `json:"data"`
	}
	r.JSON(e.t, &body)
	return body.Data.ID
}

// confirmSender delivers the sender's current OTP (as the OTP worker would,
// so it also works without workers), reads it from the owner's inbox and
// enters it in the dashboard. It returns the sender's new status.
func (e *msgEnv) confirmSender(org *Org, id int64, p string) string {
	e.t.Helper()
	ctx := context.Background()
	var raw []byte
	if err := e.App.DB.Pool.QueryRow(ctx, `SELECT args FROM river.river_job
		WHERE kind = 'sender_otp' AND args->>'schema' = $1 AND (args->>'sender_id')::bigint = $2
		ORDER BY id DESC LIMIT 1`, org.Tenant.Schema, id).Scan(&raw); err != nil {
		e.t.Fatalf("otp job of sender %d: %v", id, err)
	}
	var args queue.OTPArgs
	if err := json.Unmarshal(raw, &args); err != nil {
		e.t.Fatal(err)
	}
	if err := e.App.Senders.DeliverOTP(ctx, args); err != nil {
		e.t.Fatalf("deliver otp: %v", err)
	}
	inbox, err := e.net.Inbox(ctx, p)
	if err != nil {
		e.t.Fatal(err)
	}
	inbox = slices.DeleteFunc(inbox, func(m builtin.InboxMessage) bool { return m.FromPhone != builtin.ServicePhone })
	if len(inbox) == 0 {
		e.t.Fatalf("no OTP in the inbox of %s", p)
	}
	code := otpRE.FindStringSubmatch(inbox[len(inbox)-1].Content)
	if code == nil {
		e.t.Fatalf("no code in %q", inbox[len(inbox)-1].Content)
	}
	r := e.Do(Request{Method: http.MethodPost, Path: fmt.Sprintf("/api/v1/central/sender-numbers/%d/verify", id),
		Header: org.Bearer(), Body: map[string]any{"otp": code[1]}})
	if r.Status != http.StatusOK {
		e.t.Fatalf("verify sender %d = %d %s", id, r.Status, r.Body)
	}
	var body struct {
		Data struct {
			Status string `json:"status"`
		} `json:"data"`
	}
	r.JSON(e.t, &body)
	return body.Data.Status
}

// activeSender makes p an active sender number of org: a verified network
// account, registration, OTP. It returns the sender's id.
func (e *msgEnv) activeSender(org *Org, p string) int64 {
	e.t.Helper()
	e.account(accountSpec(p))
	id := e.registerSender(org, p)
	if st := e.confirmSender(org, id, p); st != "active" {
		e.t.Fatalf("sender %s is %s after verification, want active", p, st)
	}
	return id
}

// ownerUnverifiedSender makes p a sender number of org whose code was
// entered but whose owner the network has not verified
// (pending_account_verification). It returns the sender's id.
func (e *msgEnv) ownerUnverifiedSender(org *Org, p string) int64 {
	e.t.Helper()
	e.account(builtin.AccountSpec{Phone: p, PhoneVerified: true, ReceivingEnabled: true})
	id := e.registerSender(org, p)
	if st := e.confirmSender(org, id, p); st != "pending_account_verification" {
		e.t.Fatalf("sender %s is %s after verification, want pending_account_verification", p, st)
	}
	return id
}

// setLimit sets the sender's daily_limit_override through the dashboard
// (nil clears it).
func (e *msgEnv) setLimit(org *Org, id int64, limit *int) {
	e.t.Helper()
	r := e.Do(Request{Method: http.MethodPatch, Path: fmt.Sprintf("/api/v1/central/sender-numbers/%d", id),
		Header: org.Bearer(), Body: map[string]any{"daily_limit_override": limit}})
	if r.Status != http.StatusOK {
		e.t.Fatalf("set limit of sender %d = %d %s", id, r.Status, r.Body)
	}
}

// relogin signs the owner in again, for when the fake clock has outlived
// the access token.
func (e *msgEnv) relogin(org *Org) {
	e.t.Helper()
	r := e.Do(Request{Method: http.MethodPost, Path: "/api/v1/central/login",
		Body: map[string]any{"email": org.OwnerEmail, "password": org.OwnerPassword}})
	if r.Status != http.StatusOK {
		e.t.Fatalf("login = %d %s", r.Status, r.Body)
	}
	org.AccessToken = r.Map(e.t)["access_token"].(string)
}

// text is the body of a text message from sender id to p.
func text(id int64, p, content string) map[string]any {
	return map[string]any{"sender_number_id": id, "to_phone": p, "type": "text", "content": content}
}

// send posts a message with org's key (and extra headers).
func (e *msgEnv) send(org *Org, body any, headers ...map[string]string) *Response {
	e.t.Helper()
	h := org.Key()
	for _, extra := range headers {
		for k, v := range extra {
			h[k] = v
		}
	}
	return e.Do(Request{Method: http.MethodPost, Path: messagesPath, Header: h, Body: body})
}

// message is the message resource.
type message struct {
	ID              int64   `json:"id"`
	SenderNumberID  int64   `json:"sender_number_id"`
	RecipientUserID *int64  `json:"recipient_user_id"`
	ConversationID  *int64  `json:"conversation_id"`
	MessageID       *int64  `json:"message_id"`
	MessageType     string  `json:"message_type"`
	Content         string  `json:"content"`
	Status          string  `json:"status"`
	SentAt          *string `json:"sent_at"`
	ToPhone         string  `json:"to_phone"`
	FileName        *string `json:"file_name"`
	FileSize        *int64  `json:"file_size"`
	FileType        *string `json:"file_type"`
	Duration        *int    `json:"duration"`
	ClientReference *string `json:"client_reference"`
	ErrorCode       *string `json:"error_code"`
	ErrorMessage    *string `json:"error_message"`
	CreatedAt       string  `json:"created_at"`
	Direction       string  `json:"direction"`
	FromPhone       *string `json:"from_phone"`
	DeliveredAt     *string `json:"delivered_at"`
	ReadAt          *string `json:"read_at"`
	ReceivedAt      *string `json:"received_at"`
	Delivery        *struct {
		State         string  `json:"state"`
		Attempts      int     `json:"attempts"`
		LastError     *string `json:"last_error"`
		LastAttemptAt *string `json:"last_attempt_at"`
		NextAttemptAt *string `json:"next_attempt_at"`
	} `json:"delivery"`
}

// accepted checks a 202 and returns its message.
func accepted(t *testing.T, r *Response) message {
	t.Helper()
	if r.Status != http.StatusAccepted {
		t.Fatalf("send = %d %s, want 202", r.Status, r.Body)
	}
	var body struct {
		Data message `json:"data"`
	}
	r.JSON(t, &body)
	return body.Data
}

// getMessage reads a message through the Tenant API.
func (e *msgEnv) getMessage(org *Org, id int64) message {
	e.t.Helper()
	r := e.Do(Request{Method: http.MethodGet, Path: fmt.Sprintf("%s/%d", messagesPath, id), Header: org.Key()})
	if r.Status != http.StatusOK {
		e.t.Fatalf("get message %d = %d %s", id, r.Status, r.Body)
	}
	var body struct {
		Data message `json:"data"`
	}
	r.JSON(e.t, &body)
	return body.Data
}

// waitStatus polls the message until it has status.
func (e *msgEnv) waitStatus(org *Org, id int64, status string, timeout time.Duration) message {
	e.t.Helper()
	var m message
	poll(e.t, timeout, func() (bool, string) {
		m = e.getMessage(org, id)
		return m.Status == status, fmt.Sprintf("message %d is %s, want %s", id, m.Status, status)
	})
	return m
}

// networkMessages counts messages the network holds for the tenant's
// references (one per delivered message).
func (e *msgEnv) networkMessages(org *Org) int {
	e.t.Helper()
	var n int
	if err := e.App.DB.Pool.QueryRow(context.Background(),
		`SELECT count(*) FROM network.messages WHERE reference LIKE $1 || ':%'`, org.Tenant.Schema).Scan(&n); err != nil {
		e.t.Fatal(err)
	}
	return n
}

// requireNetworkIDs fails the test unless each of the tenant's messages
// points at the network message with its reference (a retry after a lost
// answer records the delivery the network made, not another).
func (e *msgEnv) requireNetworkIDs(org *Org) {
	e.t.Helper()
	var mismatched int
	// On Citus, a pool connection whose coordinator backend still holds
	// its connection to a worker node that was stopped and started fails
	// its first statement there ("failure on connection marked as
	// essential", db.IsNodeLost; the API answers it 503) and drops it: the
	// check is read again, as a client would retry.
	var err error
	for try := 0; try < 3; try++ {
		err = e.App.DB.Pool.QueryRow(context.Background(), `SELECT count(*) FROM `+org.Tenant.Table("messages")+` m
			LEFT JOIN network.messages n ON n.reference = $1 || ':' || m.id
			WHERE n.id IS DISTINCT FROM m.message_id`, org.Tenant.Schema).Scan(&mismatched)
		if !db.IsNodeLost(err) {
			break
		}
	}
	if err != nil {
		e.t.Fatal(err)
	}
	if mismatched != 0 {
		e.t.Fatalf("%d messages do not point at their network message", mismatched)
	}
}

// deliveryWorkers counts the River clients (worker processes or apps) that
// ran the last attempt of a completed delivery job.
func (e *msgEnv) deliveryWorkers() int {
	e.t.Helper()
	var n int
	if err := e.App.DB.Pool.QueryRow(context.Background(), `SELECT count(DISTINCT attempted_by[array_upper(attempted_by, 1)])
		FROM river.river_job WHERE kind = 'message_delivery' AND state = 'completed'`).Scan(&n); err != nil {
		e.t.Fatal(err)
	}
	return n
}

// wantFields checks a 422 validation_failed naming exactly fields.
func wantFields(t *testing.T, r *Response, fields ...string) map[string][]string {
	t.Helper()
	m := wantError(t, r, http.StatusUnprocessableEntity, "validation_failed")
	raw, _ := json.Marshal(m["errors"])
	var got map[string][]string
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatalf("errors of %s: %v", r.Body, err)
	}
	var names []string
	for k := range got {
		names = append(names, k)
	}
	slices.Sort(names)
	want := slices.Clone(fields)
	slices.Sort(want)
	if !slices.Equal(names, want) {
		t.Fatalf("field errors %v (%s), want %v", names, r.Body, want)
	}
	return got
}

// Every validation rule of a send, each field error at once, nothing stored.
func TestSendValidation(t *testing.T) {
	t.Parallel()
	e := startMsg(t, Options{})
	org := e.Register(t)
	sid := e.activeSender(org, phoneN(1))
	to := phoneN(2)
	e.recipient(to)
	img := func(extra map[string]any) map[string]any {
		b := map[string]any{"sender_number_id": sid, "to_phone": to, "type": "image",
			"content": "https://cdn.example.com/a.png", "file_name": "a.png", "file_size": 1000, "file_type": "image/png"}
		for k, v := range extra {
			if v == nil {
				delete(b, k)
			} else {
				b[k] = v
			}
		}
		return b
	}
	voice := func(extra map[string]any) map[string]any {
		b := img(map[string]any{"type": "voice", "content": "https://cdn.example.com/v.ogg", "file_name": "v.ogg",
			"file_type": "audio/ogg", "duration": 12})
		for k, v := range extra {
			if v == nil {
				delete(b, k)
			} else {
				b[k] = v
			}
		}
		return b
	}
	doc := func(extra map[string]any) map[string]any {
		b := img(map[string]any{"type": "document", "content": "https://cdn.example.com/r.pdf", "file_name": "r.pdf",
			"file_type": "application/pdf"})
		for k, v := range extra {
			if v == nil {
				delete(b, k)
			} else {
				b[k] = v
			}
		}
		return b
	}
	long := func(n int) string { return strings.Repeat("a", n) }
	tests := []struct {
		name   string
		body   any
		header map[string]string
		fields []string
	}{
		{"empty object", map[string]any{}, nil, []string{"to_phone", "type", "sender_number_id", "sender_phone"}},
		{"unknown type", map[string]any{"sender_number_id": sid, "to_phone": to, "type": "video", "content": "x"}, nil, []string{"type"}},
		{"malformed recipient", text(sid, "12345", "hi"), nil, []string{"to_phone"}},
		{"recipient without plus", text(sid, "14155550002", "hi"), nil, []string{"to_phone"}},
		{"malformed sender phone", map[string]any{"sender_phone": "+1", "to_phone": to, "type": "text", "content": "hi"}, nil, []string{"sender_phone"}},
		{"sender id not positive", text(0, to, "hi"), nil, []string{"sender_number_id"}},
		{"wrong JSON types reported together", map[string]any{"sender_number_id": "7", "to_phone": 5, "type": "text", "content": 3}, nil,
			[]string{"sender_number_id", "to_phone", "content"}},
		{"text without content", map[string]any{"sender_number_id": sid, "to_phone": to, "type": "text"}, nil, []string{"content"}},
		{"text empty", text(sid, to, ""), nil, []string{"content"}},
		{"text blank", text(sid, to, "   "), nil, []string{"content"}},
		{"text too long", text(sid, to, long(4097)), nil, []string{"content"}},
		{"image needs file fields", img(map[string]any{"file_name": nil, "file_size": nil, "file_type": nil}), nil,
			[]string{"file_name", "file_size", "file_type"}},
		{"image URL not https", img(map[string]any{"content": "http://cdn.example.com/a.png"}), nil, []string{"content"}},
		{"image URL relative", img(map[string]any{"content": "/a.png"}), nil, []string{"content"}},
		{"image URL too long", img(map[string]any{"content": "https://cdn.example.com/" + long(2030)}), nil, []string{"content"}},
		{"image URL with credentials", img(map[string]any{"content": "https://u:p@cdn.example.com/a.png"}), nil, []string{"content"}},
		{"image over 5 MB", img(map[string]any{"file_size": 5<<20 + 1}), nil, []string{"file_size"}},
		{"image not image/*", img(map[string]any{"file_type": "application/pdf"}), nil, []string{"file_type"}},
		{"file size zero", img(map[string]any{"file_size": 0}), nil, []string{"file_size"}},
		{"file size not an integer", img(map[string]any{"file_size": 10.5}), nil, []string{"file_size"}},
		{"file name too long", img(map[string]any{"file_name": long(252) + ".png"}), nil, []string{"file_name"}},
		{"file name with a path", img(map[string]any{"file_name": "../etc/passwd"}), nil, []string{"file_name"}},
		{"file type not a MIME type", img(map[string]any{"file_type": "png"}), nil, []string{"file_type"}},
		{"voice needs duration", voice(map[string]any{"duration": nil}), nil, []string{"duration"}},
		{"voice duration 0", voice(map[string]any{"duration": 0}), nil, []string{"duration"}},
		{"voice duration 301", voice(map[string]any{"duration": 301}), nil, []string{"duration"}},
		{"voice over 16 MB", voice(map[string]any{"file_size": 16<<20 + 1}), nil, []string{"file_size"}},
		{"voice not audio/*", voice(map[string]any{"file_type": "video/mp4"}), nil, []string{"file_type"}},
		{"document over 100 MB", doc(map[string]any{"file_size": 100<<20 + 1}), nil, []string{"file_size"}},
		{"duration out of range on any type", map[string]any{"sender_number_id": sid, "to_phone": to, "type": "text", "content": "hi", "duration": 301}, nil,
			[]string{"duration"}},
		{"client reference too long", map[string]any{"sender_number_id": sid, "to_phone": to, "type": "text", "content": "hi",
			"client_reference": long(129)}, nil, []string{"client_reference"}},
		{"idempotency key too long", text(sid, to, "hi"), map[string]string{"Idempotency-Key": long(256)}, []string{"Idempotency-Key"}},
		{"sender id and phone naming different numbers", map[string]any{"sender_number_id": sid, "sender_phone": to,
			"to_phone": to, "type": "text", "content": "hi"}, nil, []string{"sender_phone"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var hs []map[string]string
			if tt.header != nil {
				hs = append(hs, tt.header)
			}
			wantFields(t, e.send(org, tt.body, hs...), tt.fields...)
		})
	}
	// Bodies that are not one JSON object.
	wantError(t, e.send(org, "not json"), http.StatusBadRequest, "malformed_json")
	wantError(t, e.send(org, `[1, 2]`), http.StatusBadRequest, "malformed_json")
	wantError(t, e.Do(Request{Method: http.MethodPost, Path: messagesPath, Header: org.Key()}), http.StatusBadRequest, "malformed_json")

	// Nothing was stored or counted by any of them.
	list := e.Do(Request{Method: http.MethodGet, Path: messagesPath, Header: org.Key()})
	if !strings.Contains(string(list.Body), `"data":[]`) {
		t.Fatalf("history after refused sends: %s", list.Body)
	}

	// The limits themselves are accepted: 4096 characters (multibyte), a
	// 2048-character URL, 5 MB image, 16 MB voice with duration 1 and 300,
	// 100 MB document of any type, a 128-character reference, a 255-character
	// key, and sender_number_id with the matching sender_phone.
	okBodies := []struct {
		body   map[string]any
		header map[string]string
	}{
		{text(sid, to, strings.Repeat("é", 4096)), nil},
		{img(map[string]any{"content": "https://cdn.example.com/" + long(2048-len("https://cdn.example.com/")), "file_size": 5 << 20}), nil},
		{voice(map[string]any{"file_size": 16 << 20, "duration": 1}), nil},
		{voice(map[string]any{"duration": 300}), nil},
		{doc(map[string]any{"file_size": 100 << 20, "file_type": "application/x-custom"}), nil},
		{map[string]any{"sender_number_id": sid, "sender_phone": phoneN(1), "to_phone": to, "type": "text", "content": "both",
			"client_reference": long(128)}, map[string]string{"Idempotency-Key": long(255)}},
		{map[string]any{"sender_phone": "+1 (415) 555-0001", "to_phone": "+1 415 555 0002", "type": "text", "content": "by phone"}, nil},
	}
	for i, ok := range okBodies {
		var hs []map[string]string
		if ok.header != nil {
			hs = append(hs, ok.header)
		}
		m := accepted(t, e.send(org, ok.body, hs...))
		if m.Status != "queued" || m.SenderNumberID != sid || m.ToPhone != to {
			t.Fatalf("accepted body %d: %+v", i, m)
		}
	}
}

// The accepted message: 202 {"data": message} with every field of the
// message resource (docs/api.md, §Sending), queued, the recipient known at
// once.
func TestSendAccepted(t *testing.T) {
	t.Parallel()
	e := startMsg(t, Options{})
	org := e.Register(t)
	sid := e.activeSender(org, phoneN(1))
	rid := e.recipient(phoneN(2))
	r := e.send(org, map[string]any{"sender_number_id": sid, "to_phone": phoneN(2), "type": "voice",
		"content": "https://cdn.example.com/v.ogg", "file_name": "v.ogg", "file_size": 2048, "file_type": "audio/ogg",
		"duration": 42, "client_reference": "order-17"})
	m := accepted(t, r)
	var raw map[string]any
	r.JSON(t, &raw)
	data := raw["data"].(map[string]any)
	for _, f := range []string{"id", "sender_number_id", "recipient_user_id", "conversation_id", "message_id",
		"message_type", "content", "status", "sent_at", "client_reference", "error_code", "error_message", "created_at", "to_phone"} {
		if _, ok := data[f]; !ok {
			t.Errorf("field %s missing from %s", f, r.Body)
		}
	}
	if m.Status != "queued" || m.MessageType != "voice" || m.RecipientUserID == nil || *m.RecipientUserID != rid ||
		m.ConversationID != nil || m.MessageID != nil || m.SentAt != nil || *m.Duration != 42 || *m.FileSize != 2048 ||
		*m.ClientReference != "order-17" || m.ErrorCode != nil {
		t.Fatalf("accepted message %s", r.Body)
	}
	if loc := r.Header.Get("Location"); loc != fmt.Sprintf("%s/%d", messagesPath, m.ID) {
		t.Fatalf("Location %q", loc)
	}
	if _, err := time.Parse(time.RFC3339, m.CreatedAt); err != nil || !strings.HasSuffix(m.CreatedAt, "Z") {
		t.Fatalf("created_at %q", m.CreatedAt)
	}
	if got := e.getMessage(org, m.ID); got.ID != m.ID || got.Status != "queued" {
		t.Fatalf("GET message: %+v", got)
	}
}

// The sender-state errors with their exact codes and messages.
func TestSendSenderErrors(t *testing.T) {
	t.Parallel()
	e := startMsg(t, Options{})
	org := e.Register(t)
	to := phoneN(9)
	e.recipient(to)
	ctx := context.Background()

	pending := phoneN(1) // registered, OTP not entered
	e.account(accountSpec(pending))
	pendingID := e.registerSender(org, pending)

	ownerUnverifiedID := e.ownerUnverifiedSender(org, phoneN(2))

	suspended := phoneN(3)
	suspendedID := e.activeSender(org, suspended)
	if _, err := e.App.Senders.Suspend(ctx, senders.AdminTarget{Phone: suspended, OrgID: org.ID}); err != nil {
		t.Fatal(err)
	}
	rejected := phoneN(4)
	rejectedID := e.activeSender(org, rejected)
	if _, err := e.App.Senders.Reject(ctx, senders.AdminTarget{Phone: rejected, OrgID: org.ID}); err != nil {
		t.Fatal(err)
	}

	const notActive = "The sender number is not active."
	const arabic = "يجب توثيق حساب مالك الرقم في شبكة المراسلة قبل استخدام واجهة الإرسال."
	tests := []struct {
		name    string
		body    map[string]any
		status  int
		code    string
		message string
	}{
		{"pending verification", text(pendingID, to, "hi"), 422, "sender_not_active", notActive},
		{"pending verification by phone", map[string]any{"sender_phone": pending, "to_phone": to, "type": "text", "content": "hi"},
			422, "sender_not_active", notActive},
		{"suspended", text(suspendedID, to, "hi"), 422, "sender_not_active", notActive},
		{"rejected", text(rejectedID, to, "hi"), 422, "sender_not_active", notActive},
		{"owner unverified", text(ownerUnverifiedID, to, "hi"), 422, "sender_owner_unverified", arabic},
		{"unknown sender id", text(999999, to, "hi"), 422, "sender_not_found", ""},
		{"unknown sender phone", map[string]any{"sender_phone": phoneN(77), "to_phone": to, "type": "text", "content": "hi"},
			422, "sender_not_found", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := wantError(t, e.send(org, tt.body), tt.status, tt.code)
			if tt.message != "" && m["message"] != tt.message {
				t.Fatalf("message %q, want %q", m["message"], tt.message)
			}
		})
	}
	// Another organization's number is unknown here (ids are numbered per
	// organization, so it is named by phone).
	other := e.Register(t)
	e.activeSender(other, phoneN(5))
	wantError(t, e.send(org, map[string]any{"sender_phone": phoneN(5), "to_phone": to, "type": "text", "content": "hi"}),
		422, "sender_not_found")
	if n := e.networkMessages(org); n != 0 {
		t.Fatalf("%d network messages after refused sends", n)
	}
}

// An unreachable recipient is refused at acceptance with the lookup's
// reason_code.
func TestSendRecipientUnreachable(t *testing.T) {
	t.Parallel()
	e := startMsg(t, Options{})
	org := e.Register(t)
	from := phoneN(1)
	sid := e.activeSender(org, from)
	e.account(builtin.AccountSpec{Phone: phoneN(3), Verified: true, PhoneVerified: false, ReceivingEnabled: true})
	e.account(builtin.AccountSpec{Phone: phoneN(4), Verified: true, PhoneVerified: true, ReceivingEnabled: false})
	e.recipient(phoneN(5))
	if err := e.net.Block(context.Background(), phoneN(5), from); err != nil {
		t.Fatal(err)
	}
	tests := []struct{ to, reason string }{
		{phoneN(2), "not_registered"},
		{phoneN(3), "phone_unverified"},
		{phoneN(4), "receiving_disabled"},
		{phoneN(5), "blocked_sender"},
		{from, "self"},
	}
	for _, tt := range tests {
		t.Run(tt.reason, func(t *testing.T) {
			m := wantError(t, e.send(org, text(sid, tt.to, "hi")), 422, "recipient_unreachable")
			if m["reason_code"] != tt.reason {
				t.Fatalf("reason_code %v, want %s", m["reason_code"], tt.reason)
			}
		})
	}
}

// Idempotency-Key: a repeat answers the first response and sends nothing; a
// different body under the key is refused; concurrent repeats make one
// message and get the same answer.
func TestSendIdempotency(t *testing.T) {
	t.Parallel()
	e := startMsg(t, Options{Workers: true})
	org := e.Register(t)
	sid := e.activeSender(org, phoneN(1))
	to := phoneN(2)
	e.recipient(to)
	key := map[string]string{"Idempotency-Key": "order-17-attempt"}

	first := e.send(org, text(sid, to, "hello"), key)
	m := accepted(t, first)
	again := e.send(org, map[string]any{"content": "hello", "type": "text", "to_phone": "+1 415 555 0002", "sender_number_id": sid}, key)
	if again.Status != http.StatusAccepted || string(again.Body) != string(first.Body) {
		t.Fatalf("repeat = %d %s, want the first answer %s", again.Status, again.Body, first.Body)
	}
	if again.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("repeat not marked replayed")
	}
	wantError(t, e.send(org, text(sid, to, "hello, changed"), key), 422, "idempotency_key_reused")

	// The repeat still answers after the message was delivered, and after the
	// sender was suspended: it is the first answer, not a new send.
	e.waitStatus(org, m.ID, "delivered", 10*time.Second)
	if _, err := e.App.Senders.Suspend(context.Background(), senders.AdminTarget{Phone: phoneN(1), OrgID: org.ID}); err != nil {
		t.Fatal(err)
	}
	if r := e.send(org, text(sid, to, "hello"), key); string(r.Body) != string(first.Body) {
		t.Fatalf("repeat after suspension = %d %s", r.Status, r.Body)
	}
	if _, err := e.App.Senders.Unsuspend(context.Background(), senders.AdminTarget{Phone: phoneN(1), OrgID: org.ID}); err != nil {
		t.Fatal(err)
	}

	// Another organization has keys of its own.
	other := e.Register(t)
	osid := e.activeSender(other, phoneN(3))
	accepted(t, e.send(other, text(osid, to, "hello"), key))

	// After 24 hours the key is forgotten: the same request sends again.
	e.Clock.Advance(24*time.Hour + time.Second)
	later := accepted(t, e.send(org, text(sid, to, "hello"), key))
	if later.ID == m.ID {
		t.Fatal("a 24-hour-old key replayed")
	}

	// Concurrent repeats of a new key: one message, the same answer for all.
	const n = 10
	ckey := map[string]string{"Idempotency-Key": "concurrent"}
	bodies := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			r, err := e.Env.Send(Request{Method: http.MethodPost, Path: messagesPath, Header: mergeHeaders(org.Key(), ckey),
				Body: text(sid, to, "once")})
			if err != nil {
				t.Error(err)
				return
			}
			if r.Status != http.StatusAccepted {
				t.Errorf("concurrent repeat %d = %d %s", i, r.Status, r.Body)
			}
			bodies[i] = string(r.Body)
		})
	}
	wg.Wait()
	for i := 1; i < n; i++ {
		if bodies[i] != bodies[0] {
			t.Fatalf("concurrent answers differ:\n%s\n%s", bodies[0], bodies[i])
		}
	}
	var once int
	if err := e.App.DB.Pool.QueryRow(context.Background(),
		fmt.Sprintf(`SELECT count(*) FROM %s WHERE content = 'once'`, org.Tenant.Table("messages"))).Scan(&once); err != nil {
		t.Fatal(err)
	}
	if once != 1 {
		t.Fatalf("%d messages from %d concurrent repeats, want 1", once, n)
	}
	var cm struct {
		Data message `json:"data"`
	}
	if err := json.Unmarshal([]byte(bodies[0]), &cm); err != nil {
		t.Fatal(err)
	}
	e.waitStatus(org, cm.Data.ID, "delivered", 10*time.Second)
	if got := e.networkMessages(org); got != 3 {
		t.Fatalf("network holds %d messages of the organization, want 3 (hello, hello after 24 h, once)", got)
	}
}

func mergeHeaders(hs ...map[string]string) map[string]string {
	out := map[string]string{}
	for _, h := range hs {
		for k, v := range h {
			out[k] = v
		}
	}
	return out
}

// The history: newest first, cursor pages, every filter, invalid filters 422.
func TestMessageHistory(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	e := startMsg(t, Options{Start: start})
	org := e.Register(t)
	s1 := e.activeSender(org, phoneN(1))
	s2 := e.activeSender(org, phoneN(2))
	e.recipient(phoneN(10))
	e.recipient(phoneN(11))
	var ids []int64
	for i := range 7 {
		sid, to := s1, phoneN(10)
		if i%2 == 1 {
			sid, to = s2, phoneN(11)
		}
		body := text(sid, to, fmt.Sprintf("m%d", i))
		if i == 3 {
			body = map[string]any{"sender_number_id": sid, "to_phone": to, "type": "document",
				"content": "https://cdn.example.com/r.pdf", "file_name": "r.pdf", "file_size": 10, "file_type": "application/pdf",
				"client_reference": "ref-3"}
		}
		ids = append(ids, accepted(t, e.send(org, body)).ID)
		e.Clock.Advance(time.Hour)
	}
	list := func(query string) ([]int64, *string) {
		t.Helper()
		r := e.Do(Request{Method: http.MethodGet, Path: messagesPath + query, Header: org.Key()})
		if r.Status != http.StatusOK {
			t.Fatalf("list %s = %d %s", query, r.Status, r.Body)
		}
		var body struct {
			Data       []message `json:"data"`
			NextCursor *string   `json:"next_cursor"`
		}
		r.JSON(t, &body)
		var got []int64
		for _, m := range body.Data {
			got = append(got, m.ID)
		}
		return got, body.NextCursor
	}
	rev := slices.Clone(ids)
	slices.Reverse(rev)

	// Pages of 3: newest first, cursor to the end, null on the last page.
	var all []int64
	cursor := ""
	for pages := 0; ; pages++ {
		q := "?limit=3"
		if cursor != "" {
			q += "&cursor=" + cursor
		}
		got, next := list(q)
		all = append(all, got...)
		if next == nil {
			if pages != 2 {
				t.Fatalf("%d pages, want 3", pages+1)
			}
			break
		}
		cursor = *next
	}
	if !slices.Equal(all, rev) {
		t.Fatalf("paged history %v, want %v", all, rev)
	}
	if got, next := list(""); len(got) != 7 || next != nil {
		t.Fatalf("default page: %v %v", got, next)
	}

	filters := []struct {
		query string
		want  []int64
	}{
		{fmt.Sprintf("?sender_number_id=%d", s2), []int64{ids[5], ids[3], ids[1]}},
		{"?to_phone=" + strings.ReplaceAll(phoneN(10), "+", "%2B"), []int64{ids[6], ids[4], ids[2], ids[0]}},
		{"?type=document", []int64{ids[3]}},
		{"?status=queued&limit=2", []int64{ids[6], ids[5]}},
		{"?status=sent", nil},
		{"?client_reference=ref-3", []int64{ids[3]}},
		{"?since=" + start.Add(2*time.Hour).Format(time.RFC3339) + "&until=" + start.Add(4*time.Hour).Format(time.RFC3339),
			[]int64{ids[3], ids[2]}},
		{fmt.Sprintf("?sender_number_id=%d&type=text", s1), []int64{ids[6], ids[4], ids[2], ids[0]}},
	}
	for _, f := range filters {
		if got, _ := list(f.query); !slices.Equal(got, f.want) {
			t.Errorf("list %s = %v, want %v", f.query, got, f.want)
		}
	}

	// A time window pages by (created_at, id): same order, its own cursors.
	window := "&since=" + start.Add(time.Hour).Format(time.RFC3339) + "&until=" + start.Add(6*time.Hour).Format(time.RFC3339)
	var timed []int64
	cursor = ""
	for {
		q := "?limit=2" + window
		if cursor != "" {
			q += "&cursor=" + cursor
		}
		got, next := list(q)
		timed = append(timed, got...)
		if next == nil {
			break
		}
		cursor = *next
	}
	if want := []int64{ids[5], ids[4], ids[3], ids[2], ids[1]}; !slices.Equal(timed, want) {
		t.Fatalf("paged window %v, want %v", timed, want)
	}
	_, idCursor := list("?limit=1")
	wantFields(t, e.Do(Request{Method: http.MethodGet, Path: messagesPath + "?limit=1&cursor=" + *idCursor + window, Header: org.Key()}), "cursor")

	bad := []struct{ query, field string }{
		{"?limit=0", "limit"},
		{"?limit=101", "limit"},
		{"?limit=x", "limit"},
		{"?cursor=nope", "cursor"},
		{"?sender_number_id=abc", "sender_number_id"},
		{"?to_phone=123", "to_phone"},
		{"?status=bounced", "status"},
		{"?type=video", "type"},
		{"?since=yesterday", "since"},
		{"?until=2026-11-22", "until"},
		{"?since=2026-11-23T00:00:00Z&until=2026-11-22T00:00:00Z", "until"},
	}
	for _, b := range bad {
		r := e.Do(Request{Method: http.MethodGet, Path: messagesPath + b.query, Header: org.Key()})
		wantFields(t, r, b.field)
	}

	// Direction and conversation: the built-in network delivers ids[0] in
	// the conversation of s1 and its recipient, who answers in it.
	e.deliverNow(org, ids[0])
	r := e.Do(Request{Method: http.MethodGet, Path: fmt.Sprintf("%s/%d", messagesPath, ids[0]), Header: org.Key()})
	var out struct {
		Data message `json:"data"`
	}
	r.JSON(t, &out)
	if out.Data.Status != "delivered" || out.Data.Direction != "outbound" || out.Data.FromPhone != nil ||
		out.Data.ConversationID == nil || out.Data.DeliveredAt == nil || *out.Data.DeliveredAt != *out.Data.SentAt {
		t.Fatalf("delivered message %s", r.Body)
	}
	conv := *out.Data.ConversationID
	got, err := e.App.Messages.Receive(context.Background(), messages.Inbound{ID: "net-in-1", FromPhone: phoneN(10),
		ToPhone: phoneN(1), ConversationID: conv, Media: network.Media{Type: "text", Content: "thanks"}})
	if err != nil || got != messages.ReceiptApplied {
		t.Fatalf("receive: %s %v", got, err)
	}
	inbound, _ := list("?direction=inbound")
	if len(inbound) != 1 {
		t.Fatalf("inbound messages %v", inbound)
	}
	r = e.Do(Request{Method: http.MethodGet, Path: fmt.Sprintf("%s/%d", messagesPath, inbound[0]), Header: org.Key()})
	out.Data = message{}
	r.JSON(t, &out)
	if m := out.Data; m.Direction != "inbound" || m.Status != "received" || m.FromPhone == nil || *m.FromPhone != phoneN(10) ||
		m.ToPhone != phoneN(1) || m.SenderNumberID != s1 || m.ReceivedAt == nil || m.Delivery != nil {
		t.Fatalf("inbound message %s", r.Body)
	}
	for _, f := range []struct {
		query string
		want  []int64
	}{
		// ids[0]'s delivery carried its conversation (s1 to phoneN(10)) on:
		// ids[2], ids[4] and ids[6] went after it, in the same network
		// conversation.
		{fmt.Sprintf("?conversation_id=%d", conv), []int64{inbound[0], ids[6], ids[4], ids[2], ids[0]}},
		{"?direction=outbound&limit=2", []int64{ids[6], ids[5]}},
		{"?direction=inbound&status=received", inbound},
		{"?status=delivered", []int64{ids[6], ids[4], ids[2], ids[0]}},
		{fmt.Sprintf("?conversation_id=%d&direction=outbound", conv), []int64{ids[6], ids[4], ids[2], ids[0]}},
	} {
		if got, _ := list(f.query); !slices.Equal(got, f.want) {
			t.Errorf("list %s = %v, want %v", f.query, got, f.want)
		}
	}
	// The dashboard's reads take the same filters.
	e.relogin(org) // the fake clock outlived the access token
	r = e.Do(Request{Method: http.MethodGet, Path: fmt.Sprintf("/api/v1/central/messages?conversation_id=%d&direction=inbound", conv),
		Header: org.Bearer()})
	if r.Status != http.StatusOK || !strings.Contains(string(r.Body), `"thanks"`) || strings.Contains(string(r.Body), `"m0"`) {
		t.Fatalf("dashboard conversation = %d %s", r.Status, r.Body)
	}
	for _, b := range []struct{ query, field string }{
		{"?direction=sideways", "direction"},
		{"?conversation_id=0", "conversation_id"},
		{"?conversation_id=abc", "conversation_id"},
		{"?status=seen", "status"},
	} {
		wantFields(t, e.Do(Request{Method: http.MethodGet, Path: messagesPath + b.query, Header: org.Key()}), b.field)
	}
}

// Another organization's message is not found, and its history is its own.
func TestMessageTenantIsolation(t *testing.T) {
	t.Parallel()
	e := startMsg(t, Options{})
	a, b := e.Register(t), e.Register(t)
	sa := e.activeSender(a, phoneN(1))
	sb := e.activeSender(b, phoneN(2))
	e.recipient(phoneN(3))
	ma := accepted(t, e.send(a, text(sa, phoneN(3), "from a")))
	mb := accepted(t, e.send(b, text(sb, phoneN(3), "from b")))
	if ma.ID != mb.ID {
		t.Logf("ids %d and %d (schemas number their messages independently)", ma.ID, mb.ID)
	}
	// b's id in a's schema names a's own message at most; an id only b has is 404 for a.
	mb2 := accepted(t, e.send(b, text(sb, phoneN(3), "b again")))
	r := e.Do(Request{Method: http.MethodGet, Path: fmt.Sprintf("%s/%d", messagesPath, mb2.ID), Header: a.Key()})
	wantError(t, r, http.StatusNotFound, "not_found")
	for _, p := range []string{"/0", "/-1", "/abc", "/99999999999999999999", fmt.Sprintf("/+%d", ma.ID), fmt.Sprintf("/0%d", ma.ID)} {
		wantError(t, e.Do(Request{Method: http.MethodGet, Path: messagesPath + p, Header: a.Key()}), http.StatusNotFound, "not_found")
	}
	r = e.Do(Request{Method: http.MethodGet, Path: messagesPath, Header: a.Key()})
	if strings.Contains(string(r.Body), "from b") || !strings.Contains(string(r.Body), "from a") {
		t.Fatalf("a's history: %s", r.Body)
	}
	// The dashboard reads the same history with the owner's bearer token.
	r = e.Do(Request{Method: http.MethodGet, Path: "/api/v1/central/messages", Header: b.Bearer()})
	if r.Status != http.StatusOK || !strings.Contains(string(r.Body), "b again") || strings.Contains(string(r.Body), "from a") {
		t.Fatalf("b's dashboard history = %d %s", r.Status, r.Body)
	}
	r = e.Do(Request{Method: http.MethodGet, Path: fmt.Sprintf("/api/v1/central/messages/%d", mb2.ID), Header: a.Bearer()})
	wantError(t, r, http.StatusNotFound, "not_found")
}

// Scopes: sending needs messages.send, reading messages.read.
func TestMessageScopes(t *testing.T) {
	t.Parallel()
	e := startMsg(t, Options{})
	org := e.Register(t)
	sid := e.activeSender(org, phoneN(1))
	e.recipient(phoneN(2))
	readOnly := KeyHeader(e.APIKey(t, org, "messages.read"))
	sendOnly := KeyHeader(e.APIKey(t, org, "messages.send"))
	wantError(t, e.Do(Request{Method: http.MethodPost, Path: messagesPath, Header: readOnly, Body: text(sid, phoneN(2), "x")}),
		http.StatusForbidden, "insufficient_scope")
	m := accepted(t, e.Do(Request{Method: http.MethodPost, Path: messagesPath, Header: sendOnly, Body: text(sid, phoneN(2), "x")}))
	wantError(t, e.Do(Request{Method: http.MethodGet, Path: messagesPath, Header: sendOnly}), http.StatusForbidden, "insufficient_scope")
	wantError(t, e.Do(Request{Method: http.MethodGet, Path: fmt.Sprintf("%s/%d", messagesPath, m.ID), Header: sendOnly}),
		http.StatusForbidden, "insufficient_scope")
	if r := e.Do(Request{Method: http.MethodGet, Path: fmt.Sprintf("%s/%d", messagesPath, m.ID), Header: readOnly}); r.Status != http.StatusOK {
		t.Fatalf("read with messages.read = %d", r.Status)
	}
	wantError(t, e.Do(Request{Method: http.MethodPost, Path: messagesPath, Body: text(sid, phoneN(2), "x")}),
		http.StatusUnauthorized, "missing_api_key")
}
