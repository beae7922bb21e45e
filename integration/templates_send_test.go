package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bizmsg/platform/platform/dbtest"
	"github.com/bizmsg/platform/platform/templates"
)

// getTemplate reads a template through the Tenant API.
func getTemplate(t *testing.T, e *Env, key map[string]string, id int64) template {
	t.Helper()
	r := e.Do(Request{Method: http.MethodGet, Path: fmt.Sprintf("%s/%d", templatesPath, id), Header: key})
	if r.Status != http.StatusOK {
		t.Fatalf("get template %d = %d %s", id, r.Status, r.Body)
	}
	var out struct {
		Data template `json:"data"`
	}
	r.JSON(t, &out)
	return out.Data
}

// reviewed waits until the network reviewed template id and returns it.
func reviewed(t *testing.T, e *Env, key map[string]string, id int64) template {
	t.Helper()
	var tpl template
	poll(t, 20*time.Second, func() (bool, string) {
		tpl = getTemplate(t, e, key, id)
		return tpl.Status != "pending", fmt.Sprintf("template %d is still pending", id)
	})
	return tpl
}

// hookReceiver records the payloads of the webhook requests it gets.
type hookReceiver struct {
	mu       sync.Mutex
	payloads []map[string]any
}

func (h *hookReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	var p map[string]any
	if json.Unmarshal(b, &p) == nil {
		h.mu.Lock()
		h.payloads = append(h.payloads, p)
		h.mu.Unlock()
	}
	w.WriteHeader(http.StatusNoContent)
}

// statuses returns "type:id:status" of every payload received, in order.
func (h *hookReceiver) statuses() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for _, p := range h.payloads {
		data, _ := p["data"].(map[string]any)
		out = append(out, fmt.Sprintf("%v:%v:%v", p["type"], data["id"], data["status"]))
	}
	return out
}

// subscribeHooks starts a hookReceiver and subscribes it, with key, to
// events of the organization: it returns the receiver and the endpoint.
func subscribeHooks(t *testing.T, e *Env, key map[string]string, events ...string) (*hookReceiver, webhookEndpoint) {
	t.Helper()
	hooks := &hookReceiver{}
	srv := httptest.NewServer(hooks)
	t.Cleanup(srv.Close)
	return hooks, createWebhook(t, e, key, map[string]any{"url": srv.URL, "events": events})
}

// TestTemplateReview: the built-in network reviews each new template within
// seconds by its rules (approved, or rejected saying why), the operator
// pauses and approves again, and every change reaches the organization's
// webhook as template.status_changed with the template as data.
func TestTemplateReview(t *testing.T) {
	t.Parallel()
	e := Start(t, Options{Workers: true, Env: map[string]string{"WEBHOOK_ALLOW_PRIVATE": "true"}})
	org := e.Register(t)
	key := org.Key()
	hooks, _ := subscribeHooks(t, e, key, "template.status_changed")

	tests := []struct {
		name, body, status, reason string
		examples                   map[string]string
	}{
		{"fine", "Hello {{1}}, your order ships today.", "approved", "", map[string]string{"1": "Ana"}},
		{"starts", "{{1}} is your code.", "rejected", "starts with a variable", map[string]string{"1": "123"}},
		{"ends", "Your code is {{1}}", "rejected", "ends with a variable", map[string]string{"1": "123"}},
		{"adjacent", "Hello {{1}} {{2}}, welcome.", "rejected", "two variables with only spaces between them",
			map[string]string{"1": "Ana", "2": "Silva"}},
	}
	ids := map[string]int64{}
	for _, tt := range tests {
		ids[tt.name] = createTemplate(t, e, key, map[string]any{"name": tt.name, "language": "en", "category": "utility",
			"body": tt.body, "examples": tt.examples}).ID
	}
	var want []string
	for _, tt := range tests {
		got := reviewed(t, e, key, ids[tt.name])
		reason := ""
		if got.RejectedReason != nil {
			reason = *got.RejectedReason
		}
		if got.Status != tt.status || !strings.Contains(reason, tt.reason) || (tt.reason == "") != (got.RejectedReason == nil) {
			t.Errorf("%s: %s %q, want %s %q", tt.name, got.Status, reason, tt.status, tt.reason)
		}
		want = append(want, fmt.Sprintf("template.status_changed:%d:%s", ids[tt.name], tt.status))
	}

	// The network's operator pauses the approved template and approves it
	// again (platform network templates pause|approve calls SetStatus).
	ctx := context.Background()
	fine := ids["fine"]
	for _, st := range []templates.Status{templates.StatusPaused, templates.StatusApproved} {
		if _, changed, err := e.App.Templates.SetStatus(ctx, org.Tenant, fine, st, ""); err != nil || !changed {
			t.Fatalf("operator %s: %v %v", st, changed, err)
		}
		if got := getTemplate(t, e, key, fine); got.Status != string(st) {
			t.Fatalf("after the operator's %s: %s", st, got.Status)
		}
		want = append(want, fmt.Sprintf("template.status_changed:%d:%s", fine, st))
	}
	poll(t, 20*time.Second, func() (bool, string) {
		got := hooks.statuses()
		if len(got) < len(want) {
			return false, fmt.Sprintf("webhooks %v, want %v", got, want)
		}
		for _, w := range want {
			found := false
			for _, g := range got {
				found = found || g == w
			}
			if !found {
				return false, fmt.Sprintf("webhooks %v lack %s", got, w)
			}
		}
		return true, ""
	})
	// The fine template's events arrive in the order they happened.
	var fineEvents []string
	for _, s := range hooks.statuses() {
		if strings.Contains(s, fmt.Sprintf(":%d:", fine)) {
			fineEvents = append(fineEvents, s[strings.LastIndex(s, ":")+1:])
		}
	}
	if strings.Join(fineEvents, ",") != "approved,paused,approved" {
		t.Errorf("the fine template's events %v", fineEvents)
	}
}

// templateSend is the body of a template message from sender id to p.
func templateSend(id int64, p, name, language string, vars map[string]string) map[string]any {
	return map[string]any{"sender_number_id": id, "to_phone": p, "type": "template",
		"template": map[string]any{"name": name, "language": language, "variables": vars}}
}

// templateID reads template_id of a message answer.
func templateID(t *testing.T, r *Response) any {
	t.Helper()
	var body struct {
		Data map[string]any `json:"data"`
	}
	r.JSON(t, &body)
	return body.Data["template_id"]
}

// errorCode returns the code of an error answer with status.
func errorCode(t *testing.T, r *Response, status int) string {
	t.Helper()
	if r.Status != status {
		t.Fatalf("answer %d %s, want %d", r.Status, r.Body, status)
	}
	code, _ := r.Map(t)["code"].(string)
	return code
}

// TestTemplateSend: a template message with positional or named variables
// stores the rendered text and its template_id and reaches the recipient
// as text; unknown and unapproved templates and bad variables are refused;
// a deleted template's messages keep their content; another organization
// cannot use the template.
func TestTemplateSend(t *testing.T) {
	t.Parallel()
	e := startMsg(t, Options{Workers: true})
	org, other := e.Register(t), e.Register(t)
	key := org.Key()
	sender, to := e.activeSender(org, phoneN(1)), phoneN(2)
	e.recipient(to)
	otherSender := e.activeSender(other, phoneN(3))

	positional := createTemplate(t, e.Env, key, templateBody("order_update", "en_US"))
	named := createTemplate(t, e.Env, key, map[string]any{"name": "welcome", "language": "en", "category": "marketing",
		"body":     "Dear {{first_name}}, welcome to {{shop}}! Glad to have you, {{first_name}}.",
		"examples": map[string]string{"first_name": "Ana", "shop": "Acme"}})
	rejected := createTemplate(t, e.Env, key, map[string]any{"name": "code", "language": "en", "category": "authentication",
		"body": "{{1}} is your code.", "examples": map[string]string{"1": "123"}})
	for _, id := range []int64{positional.ID, named.ID} {
		if got := reviewed(t, e.Env, key, id); got.Status != "approved" {
			t.Fatalf("template %d is %s", id, got.Status)
		}
	}
	if got := reviewed(t, e.Env, key, rejected.ID); got.Status != "rejected" {
		t.Fatalf("template %d is %s", rejected.ID, got.Status)
	}

	r := e.send(org, templateSend(sender, to, "order_update", "en_US", map[string]string{"1": "B-9", "2": "Ana"}))
	m := accepted(t, r)
	want := "Order B-9\n\nHello Ana, your order ships today.\n\nReply STOP to opt out"
	if m.Content != want || m.MessageType != "template" || templateID(t, r) != float64(positional.ID) {
		t.Fatalf("positional send %s", r.Body)
	}
	r = e.send(org, templateSend(sender, to, "welcome", "en", map[string]string{"first_name": "Bo", "shop": "Acme"}))
	mn := accepted(t, r)
	if mn.Content != "Dear Bo, welcome to Acme! Glad to have you, Bo." || templateID(t, r) != float64(named.ID) {
		t.Fatalf("named send %s", r.Body)
	}
	// The network gets the rendered text as a text message.
	e.waitStatus(org, m.ID, "delivered", 20*time.Second)
	inbox, err := e.net.Inbox(context.Background(), to)
	if err != nil {
		t.Fatal(err)
	}
	if len(inbox) == 0 || inbox[0].Content != want || inbox[0].Type != "text" {
		t.Fatalf("inbox %+v", inbox)
	}

	refusals := []struct {
		name  string
		body  map[string]any
		code  string
		field string
	}{
		{"unknown name", templateSend(sender, to, "nope", "en", nil), templates.CodeTemplateNotFound, ""},
		{"unknown sender first", templateSend(999, to, "nope", "en", nil), "sender_not_found", ""},
		{"unknown language", templateSend(sender, to, "welcome", "ar", nil), templates.CodeTemplateNotFound, ""},
		{"rejected", templateSend(sender, to, "code", "en", map[string]string{"1": "1"}), templates.CodeTemplateNotApproved, ""},
		{"missing variable", templateSend(sender, to, "welcome", "en", map[string]string{"first_name": "Bo"}),
			"validation_failed", "template.variables.shop"},
		{"unknown variable", templateSend(sender, to, "welcome", "en", map[string]string{"first_name": "Bo", "shop": "A", "city": "X"}),
			"validation_failed", "template.variables.city"},
		{"empty value", templateSend(sender, to, "order_update", "en_US", map[string]string{"1": "", "2": "Ana"}),
			"validation_failed", "template.variables.1"},
		{"value too long", templateSend(sender, to, "order_update", "en_US", map[string]string{"1": "a", "2": strings.Repeat("b", 1025)}),
			"validation_failed", "template.variables.2"},
		{"value with a control character", templateSend(sender, to, "order_update", "en_US", map[string]string{"1": "a\u0000", "2": "b"}),
			"validation_failed", "template.variables.1"},
		{"value not a string", map[string]any{"sender_number_id": sender, "to_phone": to, "type": "template",
			"template": map[string]any{"name": "welcome", "language": "en", "variables": map[string]any{"first_name": 3, "shop": "A"}}},
			"validation_failed", "template.variables.first_name"},
		{"no template", map[string]any{"sender_number_id": sender, "to_phone": to, "type": "template"}, "validation_failed", "template"},
		{"content too", map[string]any{"sender_number_id": sender, "to_phone": to, "type": "template", "content": "hi",
			"template": map[string]any{"name": "welcome", "language": "en"}}, "validation_failed", "content"},
		{"another organization's template", templateSend(otherSender, to, "welcome", "en",
			map[string]string{"first_name": "Bo", "shop": "A"}), templates.CodeTemplateNotFound, ""},
	}
	for _, tt := range refusals {
		o := org
		if tt.name == "another organization's template" {
			o = other
		}
		r := e.send(o, tt.body)
		if code := errorCode(t, r, http.StatusUnprocessableEntity); code != tt.code {
			t.Errorf("%s: %s, want %s", tt.name, r.Body, tt.code)
			continue
		}
		if tt.field != "" && len(fieldErrors(t, r)[tt.field]) == 0 {
			t.Errorf("%s: no error on %s: %s", tt.name, tt.field, r.Body)
		}
	}

	// Paused or disabled by the operator: not sendable until approved again.
	ctx := context.Background()
	for _, st := range []templates.Status{templates.StatusPaused, templates.StatusDisabled} {
		if _, _, err := e.App.Templates.SetStatus(ctx, org.Tenant, named.ID, st, ""); err != nil {
			t.Fatal(err)
		}
		r := e.send(org, templateSend(sender, to, "welcome", "en", map[string]string{"first_name": "Bo", "shop": "A"}))
		if code := errorCode(t, r, http.StatusUnprocessableEntity); code != templates.CodeTemplateNotApproved ||
			!strings.Contains(string(r.Body), string(st)) {
			t.Errorf("send with a %s template = %s", st, r.Body)
		}
	}
	if _, _, err := e.App.Templates.SetStatus(ctx, org.Tenant, named.ID, templates.StatusApproved, ""); err != nil {
		t.Fatal(err)
	}
	// With an Idempotency-Key (the transaction path of acceptance): a
	// repeat answers the first send, other variables are another request.
	idem := map[string]string{"Idempotency-Key": "welcome-cy"}
	first := accepted(t, e.send(org, templateSend(sender, to, "welcome", "en", map[string]string{"first_name": "Cy", "shop": "A"}), idem))
	r = e.send(org, templateSend(sender, to, "welcome", "en", map[string]string{"first_name": "Cy", "shop": "A"}), idem)
	if again := accepted(t, r); again.ID != first.ID || r.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("the repeat = %s", r.Body)
	}
	r = e.send(org, templateSend(sender, to, "welcome", "en", map[string]string{"first_name": "Di", "shop": "A"}), idem)
	if code := errorCode(t, r, http.StatusUnprocessableEntity); code != "idempotency_key_reused" {
		t.Fatalf("other variables under the same key = %s", r.Body)
	}

	// The history filters template messages; a deleted template's messages
	// keep their content and template_id.
	r = e.Do(Request{Method: http.MethodGet, Path: messagesPath + "?type=template", Header: key})
	var list struct {
		Data []message `json:"data"`
	}
	r.JSON(t, &list)
	if r.Status != http.StatusOK || len(list.Data) != 3 {
		t.Fatalf("type=template = %d %s", r.Status, r.Body)
	}
	if r := e.Do(Request{Method: http.MethodDelete, Path: fmt.Sprintf("%s/%d", templatesPath, positional.ID), Header: key}); r.Status != http.StatusNoContent {
		t.Fatalf("delete template = %d %s", r.Status, r.Body)
	}
	r = e.Do(Request{Method: http.MethodGet, Path: fmt.Sprintf("%s/%d", messagesPath, m.ID), Header: key})
	if templateID(t, r) != float64(positional.ID) || !strings.Contains(string(r.Body), `"content":"Order B-9`) {
		t.Fatalf("the message after its template's deletion %s", r.Body)
	}
	r = e.send(org, templateSend(sender, to, "order_update", "en_US", map[string]string{"1": "B-9", "2": "Ana"}))
	if code := errorCode(t, r, http.StatusUnprocessableEntity); code != templates.CodeTemplateNotFound {
		t.Errorf("send with a deleted template = %s", r.Body)
	}
}

// TestTemplateApprovalAtAcceptance: the approval holds at acceptance, not
// only when the send read the template. A pause that commits after the
// send read the template approved, while the send waits to be accepted, is
// seen by the acceptance statement: 422 template_not_approved, nothing
// stored.
func TestTemplateApprovalAtAcceptance(t *testing.T) {
	t.Parallel()
	e := startMsg(t, Options{})
	org := e.Register(t)
	key := org.Key()
	sender, to := e.activeSender(org, phoneN(1)), phoneN(2)
	e.recipient(to)
	tpl := createTemplate(t, e.Env, key, templateBody("order_update", "en"))
	ctx := context.Background()
	if _, _, err := e.App.Templates.SetStatus(ctx, org.Tenant, tpl.ID, templates.StatusApproved, ""); err != nil {
		t.Fatal(err)
	}
	// The operator's pause, not committed yet: the row is locked, the
	// send's read still sees it approved.
	tx, err := e.App.DB.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, `UPDATE `+org.Tenant.Table("templates")+` SET status = 'paused' WHERE id = $1`, tpl.ID); err != nil {
		t.Fatal(err)
	}
	done := make(chan *Response, 1)
	go func() {
		r, err := e.Send(Request{Method: http.MethodPost, Path: messagesPath, Header: key,
			Body: templateSend(sender, to, "order_update", "en", map[string]string{"1": "A", "2": "B"})})
		if err != nil {
			t.Error(err)
		}
		done <- r
	}()
	// The send read the template approved and its acceptance now waits
	// for the pause's row lock.
	dbtest.WaitForLockWaits(t, e.App.DB, 1)
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r == nil {
		t.FailNow()
	}
	if code := errorCode(t, r, http.StatusUnprocessableEntity); code != templates.CodeTemplateNotApproved {
		t.Fatalf("send across a pause = %s", r.Body)
	}
	var n int
	if err := e.App.DB.Pool.QueryRow(ctx, `SELECT count(*) FROM `+org.Tenant.Table("messages")).Scan(&n); err != nil || n != 0 {
		t.Fatalf("%d messages stored (%v)", n, err)
	}
}

// TestTemplateReviewOverHTTP: with NETWORK=http a new template is posted
// to the external network (POST /v1/templates), and the network's signed
// template.reviewed event decides it: applied once, unchanged when
// repeated, refused when the transition is not a review's, and a verdict
// about nothing of ours changes nothing.
func TestTemplateReviewOverHTTP(t *testing.T) {
	t.Parallel()
	e := startHTTPNetwork(t)
	org := e.Register(t)
	key := org.Key()
	tpl := createTemplate(t, e.Env, key, templateBody("order_update", "en"))
	poll(t, 20*time.Second, func() (bool, string) {
		return e.networkCalls("POST /v1/templates") > 0, fmt.Sprintf("the template was not posted: %v", e.allCalls())
	})
	if got := getTemplate(t, e.Env, key, tpl.ID); got.Status != "pending" {
		t.Fatalf("before the network's verdict: %s", got.Status)
	}
	ref := templates.Reference(org.Tenant, tpl.ID)
	verdict := func(id, status string) []byte {
		return event(id, "template.reviewed", map[string]any{"reference": ref, "status": status, "reason": "Too vague."})
	}
	e.apply(verdict("evt_t1", "rejected"), "applied")
	got := getTemplate(t, e.Env, key, tpl.ID)
	if got.Status != "rejected" || got.RejectedReason == nil || *got.RejectedReason != "Too vague." {
		t.Fatalf("after the verdict: %+v", got)
	}
	e.apply(verdict("evt_t1", "rejected"), "unchanged")
	body := verdict("evt_t2", "paused")
	r := e.post(body, signed(e.secret, time.Now(), body))
	if code := errorCode(t, r, http.StatusUnprocessableEntity); code != templates.CodeTransitionNotAllowed {
		t.Fatalf("rejected → paused by the network = %s", r.Body)
	}
	body = event("evt_t3", "template.reviewed", map[string]any{"reference": ref, "status": "archived"})
	r = e.post(body, signed(e.secret, time.Now(), body))
	if fields := fieldErrors(t, r); len(fields["data.status"]) == 0 {
		t.Fatalf("an unknown verdict = %s", r.Body)
	}
	e.apply(event("evt_t4", "template.reviewed", map[string]any{"reference": "tenant_999:template:1", "status": "approved"}), "unchanged")

	// Approved by the network's operator, the template is sent: the
	// network gets the rendered text as a text message, with the template
	// and its values beside it.
	if _, _, err := e.App.Templates.SetStatus(context.Background(), org.Tenant, tpl.ID, templates.StatusApproved, ""); err != nil {
		t.Fatal(err)
	}
	sender, to := e.activeSender(org, phoneN(1)), phoneN(2)
	e.recipient(to)
	m := accepted(t, e.send(org, templateSend(sender, to, "order_update", "en", map[string]string{"1": "A-1", "2": "Ana"})))
	e.waitStatus(org, m.ID, "sent", 20*time.Second) // the HTTP network reports delivered later
	var sent struct {
		Reference, Type, Content string
		Template                 *struct {
			Name, Language string
			Variables      map[string]string
		}
	}
	for _, b := range e.networkBodies("POST /v1/messages") {
		if strings.Contains(string(b), `"template"`) {
			if err := json.Unmarshal(b, &sent); err != nil {
				t.Fatal(err)
			}
		}
	}
	if sent.Type != "text" || sent.Content != m.Content || sent.Template == nil || sent.Template.Name != "order_update" ||
		sent.Template.Language != "en" || sent.Template.Variables["2"] != "Ana" {
		t.Fatalf("the network got %+v", sent)
	}
}

// TestTemplateOutsideServiceWindow: with the network's service window on,
// a free-form message to a recipient who never wrote is refused, and a
// template message is accepted (docs/api.md, §Service window).
func TestTemplateOutsideServiceWindow(t *testing.T) {
	t.Parallel()
	e := startMsg(t, Options{Env: map[string]string{"NETWORK_SERVICE_WINDOW": "24h"}})
	org := e.Register(t)
	key := org.Key()
	sender, to := e.activeSender(org, phoneN(1)), phoneN(2)
	e.recipient(to)
	tpl := createTemplate(t, e.Env, key, templateBody("order_update", "en"))
	if _, _, err := e.App.Templates.SetStatus(context.Background(), org.Tenant, tpl.ID, templates.StatusApproved, ""); err != nil {
		t.Fatal(err)
	}
	r := e.send(org, text(sender, to, "hello"))
	if code := errorCode(t, r, http.StatusUnprocessableEntity); code != "outside_service_window" {
		t.Fatalf("a text outside the window = %s", r.Body)
	}
	accepted(t, e.send(org, templateSend(sender, to, "order_update", "en", map[string]string{"1": "A", "2": "B"})))
}
