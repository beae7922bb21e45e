package integration

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bizmsg/platform/platform/network"
	"github.com/bizmsg/platform/platform/network/builtin"
	"github.com/bizmsg/platform/platform/network/networktest"
)

// Dashboard tests in a real headless Chromium (browser.go): what an owner
// does in the browser, checked against the APIs and the built-in network.
// They save screenshots (SCREENSHOT_DIR=docs/screenshots keeps them for the
// README).

// browserEnv is a running service with workers, a one-second
// account-verification sweep, the built-in network and a browser.
type browserEnv struct {
	*senderEnv
	b *Browser
}

func startBrowser(t *testing.T, opts Options) *browserEnv {
	t.Helper()
	opts.Workers = true
	if opts.Env == nil {
		opts.Env = map[string]string{}
	}
	opts.Env["SENDER_SWEEP_INTERVAL"] = "1s"
	e := Start(t, opts)
	se := &senderEnv{Env: e, t: t, net: networktest.Builtin(t, builtin.Config{DB: e.App.DB, Clock: e.Clock})}
	return &browserEnv{senderEnv: se, b: NewBrowser(t, e.Server.URL)}
}

// signup creates an organization in the browser's sign-up form, starting
// from the home page (which sends a signed-out visitor to the log-in page).
func (e *browserEnv) signup(shot string) (email, password string) {
	e.t.Helper()
	b := e.b
	b.Open("/")
	if p := b.Path(); p != "/login" {
		e.t.Fatalf("signed-out home page went to %s, want /login", p)
	}
	b.Submit(`a[href="/signup"]`)
	email, password = uniqueEmail("ada"), "correct horse battery staple"
	b.Fill("#organization_name", "Acme Deliveries")
	b.Fill("#name", "Ada Owner")
	b.Fill("#email", email)
	b.Fill("#password", password)
	if shot != "" {
		b.Screenshot(shot)
	}
	if st := b.Submit("#signup-submit"); st != http.StatusOK || b.Path() != "/?ok=welcome" {
		e.t.Fatalf("sign-up: %d %s", st, b.Path())
	}
	b.WaitText(".notice", "Welcome")
	return email, password
}

// addSender adds p on the senders page and returns its element id number.
func (e *browserEnv) addSender(p, label string) string {
	e.t.Helper()
	b := e.b
	b.Open("/senders")
	b.Fill("#phone", p)
	b.Fill("#display_name", label)
	if st := b.Submit("#add-sender"); st != http.StatusOK {
		e.t.Fatalf("add sender: %d", st)
	}
	b.WaitText(".notice", "Sender number added")
	id := b.Eval(fmt.Sprintf(`[...document.querySelectorAll("li.sender")].find(li => li.textContent.includes(%q)).id`, p))
	n, ok := strings.CutPrefix(id, "sender-")
	if !ok {
		e.t.Fatalf("no sender element for %s (%q)", p, id)
	}
	if st := b.Eval(fmt.Sprintf(`document.getElementById(%q).dataset.status`, id)); st != "pending_verification" {
		e.t.Fatalf("new sender %s is %s", p, st)
	}
	return n
}

// eventuallyPage reloads path until sel is on it.
func (e *browserEnv) eventuallyPage(path, sel string, timeout time.Duration) {
	e.t.Helper()
	e.eventually(timeout, sel+" on "+path, func() bool {
		e.b.Open(path)
		return e.b.Has(sel)
	})
}

// refusingNetwork is the built-in network with one recipient who turns
// receiving off after every lookup: deliveries to refused fail for good,
// as they do when a recipient changes their settings between a send's
// acceptance and its delivery.
type refusingNetwork struct {
	network.Network
	refused string
}

func (n *refusingNetwork) Deliver(ctx context.Context, m network.Message) (network.Delivery, error) {
	if m.ToPhone == n.refused {
		return network.Delivery{}, &network.PermanentError{Code: network.CodeReceivingDisabled,
			Message: "The recipient does not receive messages."}
	}
	return n.Network.Deliver(ctx, m)
}

// The main flow: sign up → add a sender → read the OTP from the built-in
// network → enter it → sender active → create a key → the key works on the
// Tenant API (it sends messages over a few days) → log in again → overview,
// history, first-send page → revoke the key → it stops working → log out.
func TestDashboardBrowserFlow(t *testing.T) {
	t.Parallel()
	recipients := []string{"+14155550201", "+14155550202", "+14155550203"}
	e := startBrowser(t, Options{
		Start: time.Now().UTC().AddDate(0, 0, -5),
		Env:   map[string]string{"API_KEY_ENCRYPTION_KEY": strings.Repeat("cd", 32)},
		Network: func(base network.Network) network.Network {
			return &refusingNetwork{Network: base, refused: recipients[2]}
		},
	})
	b := e.b
	email, password := e.signup("01-signup")

	// Add a sender number whose owner's network account is verified.
	const senderPhone = "+14155550101"
	e.account(senderPhone, true)
	n := e.addSender(senderPhone, "Support")
	code := e.otp(senderPhone, 1) // the owner reads it in their network inbox
	// The code reaches the inbox a statement before its delivery is
	// recorded (otp_sent_at), and the page is rendered once: reload it
	// until it shows the time the code was sent.
	e.eventually(browserStep, "the code's sending time on /senders", func() bool {
		b.Open("/senders")
		return b.Has("#sender-"+n+" .next") && strings.Contains(b.Text("#sender-"+n+" .next"), "Enter the 6-digit code sent at")
	})
	b.Screenshot("02-sender-waiting-for-code")
	b.Fill("#otp-"+n, code)
	if st := b.Submit("#verify-" + n); st != http.StatusOK {
		t.Fatalf("verify: %d", st)
	}
	b.WaitVisible(`#sender-` + n + `[data-status="active"]`)
	b.WaitText(".notice", "the sender number is active")
	if b.Has("#otp-" + n) {
		t.Fatal("an active number still offers the code form")
	}
	b.Screenshot("03-sender-active")

	// Create a key; it is shown once, with a copy button.
	b.Open("/keys")
	b.Fill("#key-name", "Order notifications")
	b.Click(`input[name="scopes"][value="*"]`)
	b.Fill("#expires_in_days", "30")
	if st := b.Submit("#create-key"); st != http.StatusOK {
		t.Fatalf("create key: %d", st)
	}
	key := b.Value("#plain-key")
	if !strings.HasPrefix(key, "bmk_") {
		t.Fatalf("shown key %q", key)
	}
	b.Click("#copy-key")
	b.WaitText("#plain-key-status", "Copied")
	b.Screenshot("04-key-created")
	b.Open("/keys")
	if strings.Contains(b.Text("main"), key) {
		t.Fatal("the keys page shows the key again")
	}
	keyRow := b.Eval(`document.querySelector('tr[data-status="active"]').id`)
	keyID := strings.TrimPrefix(keyRow, "key-")

	// The key works on the Tenant API: it sends messages over five days.
	me := e.Do(Request{Method: http.MethodGet, Path: "/api/v1/me", Header: KeyHeader(key)})
	if me.Status != http.StatusOK {
		t.Fatalf("GET /me with the dashboard's key = %d %s", me.Status, me.Body)
	}
	senderID, _ := strconv.ParseInt(n, 10, 64)
	for _, p := range recipients {
		if _, err := e.net.AddAccount(context.Background(), builtin.AccountSpec{Phone: p, Verified: true, PhoneVerified: true, ReceivingEnabled: true}); err != nil {
			t.Fatal(err)
		}
	}
	// Per day; every third message goes to the refusing recipient and fails.
	perDay := []int{3, 5, 2, 6, 4, 7}
	total, failed, failedToday := 0, 0, 0
	for day, count := range perDay {
		for i := range count {
			r := e.Do(Request{Method: http.MethodPost, Path: "/api/v1/messages", Header: KeyHeader(key), Body: map[string]any{
				"sender_number_id": senderID, "to_phone": recipients[i%len(recipients)], "type": "text",
				"content": fmt.Sprintf("Your order #%d has shipped.", 1000+total), "client_reference": fmt.Sprintf("order-%d", 1000+total),
			}})
			if r.Status != http.StatusAccepted {
				t.Fatalf("send with the dashboard's key = %d %s", r.Status, r.Body)
			}
			total++
			if i%len(recipients) == 2 {
				failed++
				if day == len(perDay)-1 {
					failedToday++
				}
			}
		}
		e.eventually(20*time.Second, fmt.Sprintf("day %d's messages delivered", day), func() bool {
			r := e.Do(Request{Method: http.MethodGet, Path: "/api/v1/messages?status=queued", Header: KeyHeader(key)})
			return r.Status == http.StatusOK && !strings.Contains(string(r.Body), `"id"`)
		})
		if day < len(perDay)-1 {
			e.Clock.Advance(24 * time.Hour)
		}
	}

	// Days later the session has ended: log in again.
	b.Open("/")
	if p := b.Path(); p != "/login" {
		t.Fatalf("after days idle the dashboard went to %s, want /login", p)
	}
	b.Fill("#email", email)
	b.Fill("#password", password)
	if st := b.Submit("#login-submit"); st != http.StatusOK || b.Path() != "/" {
		t.Fatalf("log in: %d %s", st, b.Path())
	}
	if got, want := b.Text("#today-total"), strconv.Itoa(perDay[len(perDay)-1]); got != want {
		t.Fatalf("today's sends %s, want %s", got, want)
	}
	if got := b.Text("#today-failed"); got != strconv.Itoa(failedToday) {
		t.Fatalf("today's failures %s, want %d", got, failedToday)
	}
	quota := b.Text("#quotas tbody tr")
	if want := strconv.Itoa(1000 - perDay[len(perDay)-1]); !strings.Contains(quota, want) {
		t.Fatalf("quota row %q does not show %s remaining", quota, want)
	}
	if bars := b.Eval(`document.querySelectorAll("#usage-chart .bar").length`); bars != "30" {
		t.Fatalf("the chart has %s bars, want 30", bars)
	}
	// The built-in network delivers as it takes a message: accepted
	// messages end "delivered" (or "failed").
	if drawn := b.Eval(`document.querySelectorAll("#usage-chart rect.s-delivered").length`); drawn != strconv.Itoa(len(perDay)) {
		t.Fatalf("the chart has %s delivered segments, want %d", drawn, len(perDay))
	}
	if drawn := b.Eval(`document.querySelectorAll("#usage-chart rect.s-failed").length`); drawn != "5" {
		t.Fatalf("the chart has %s failed segments, want 5 (no failure on day 3)", drawn)
	}
	if desc := b.Eval(`document.getElementById("chart-desc").textContent`); !strings.Contains(desc, fmt.Sprintf("%d messages", total)) || !strings.Contains(desc, fmt.Sprintf("%d failed", failed)) {
		t.Fatalf("chart description %q", desc)
	}
	b.Screenshot("05-overview")
	b.Viewport(390, 844)
	b.Screenshot("06-overview-phone")
	b.Open("/senders")
	b.Screenshot("07-senders-phone")
	b.Viewport(1280, 800)

	// The history: the API's filters and paging.
	rows := func() int {
		n, _ := strconv.Atoi(b.Eval(`document.querySelectorAll("#messages tbody tr").length`))
		return n
	}
	b.Open("/messages?limit=10")
	if got := rows(); got != 10 {
		t.Fatalf("first page has %d rows, want 10", got)
	}
	b.Screenshot("08-messages")
	seen := 10
	for b.Has("#next-page") {
		b.Submit("#next-page")
		seen += rows()
	}
	if seen != total {
		t.Fatalf("paging showed %d messages, want %d", seen, total)
	}
	// Filters, set in the form.
	b.Open("/messages")
	b.Eval(`document.getElementById("f-status").value = "failed"`)
	b.Submit("#apply-filters")
	if got := rows(); got != failed || !strings.Contains(b.Text("#messages"), network.CodeReceivingDisabled) {
		t.Fatalf("status=failed shows %d rows, want %d with their error code", got, failed)
	}
	b.Open("/messages")
	b.Fill("#f-to", recipients[1])
	b.Submit("#apply-filters")
	if got, want := rows(), 9; got != want || b.Has("#form-error") {
		t.Fatalf("to_phone filter shows %d rows, want %d", got, want)
	}
	b.Open("/messages?client_reference=order-1003")
	if rows := b.Eval(`document.querySelectorAll("#messages tbody tr").length`); rows != "1" || !strings.Contains(b.Text("#messages"), "order #1003") {
		t.Fatalf("client_reference filter: %s rows: %s", rows, b.Text("main"))
	}
	b.Open("/messages?status=bogus")
	b.WaitText("#form-error", "Please correct")

	// The first-send page's command works as pasted (its body, with the key
	// from the environment).
	b.Open("/start")
	if send := b.Text("#cmd-send"); !strings.Contains(send, `"to_phone":"RECIPIENT_PHONE"`) {
		t.Fatalf("first-send command without a recipient given: %s; want the placeholder, not a made-up number", send)
	}
	b.Open("/start?to=%2B14155550123")
	send := b.Text("#cmd-send")
	if !strings.Contains(send, `X-Api-Key: $BIZMSG_API_KEY"`) || strings.Contains(send, key) || !strings.Contains(send, fmt.Sprintf(`"sender_number_id":%d`, senderID)) {
		t.Fatalf("first-send command:\n%s", send)
	}
	b.Screenshot("09-first-send")
	body := regexp.MustCompile(`-d '(.*)'`).FindStringSubmatch(send)
	if body == nil {
		t.Fatalf("no body in %s", send)
	}
	if _, err := e.net.AddAccount(context.Background(), builtin.AccountSpec{Phone: "+14155550123", Verified: true, PhoneVerified: true, ReceivingEnabled: true}); err != nil {
		t.Fatal(err)
	}
	if r := e.Do(Request{Method: http.MethodPost, Path: "/api/v1/messages", Header: KeyHeader(key), Body: body[1]}); r.Status != http.StatusAccepted {
		t.Fatalf("the first-send body = %d %s", r.Status, r.Body)
	}

	// Revoke the key, with a confirmation; it stops working at once.
	b.Open("/keys")
	b.Submit("#revoke-" + keyID)
	b.WaitText("main", "Revoke the key")
	b.Screenshot("10-revoke-confirm")
	if st := b.Submit("#confirm-revoke"); st != http.StatusOK {
		t.Fatalf("revoke: %d", st)
	}
	b.WaitVisible(`#key-` + keyID + `[data-status="revoked"]`)
	b.WaitText(".notice", "API key revoked")
	b.Screenshot("11-key-revoked")
	if r := e.Do(Request{Method: http.MethodGet, Path: "/api/v1/me", Header: KeyHeader(key)}); r.Status != http.StatusUnauthorized {
		t.Fatalf("GET /me with the revoked key = %d %s", r.Status, r.Body)
	}

	// Log out: the dashboard is closed until the next log-in.
	b.Submit("#logout")
	if p := b.Path(); p != "/login?ok=signed_out" {
		t.Fatalf("after logout: %s", p)
	}
	b.Open("/keys")
	if p := b.Path(); p != "/login" {
		t.Fatalf("after logout /keys went to %s", p)
	}
}

// A wrong OTP is refused with the attempts left, a new code cannot be asked
// for within the minute, and a right code for a number whose owner is not
// verified on the network leaves it in pending_account_verification, which
// becomes active by itself once the owner verifies.
func TestDashboardBrowserOTPStates(t *testing.T) {
	t.Parallel()
	e := startBrowser(t, Options{})
	b := e.b
	e.signup("")

	const p = "+14155550301"
	e.account(p, false)
	n := e.addSender(p, "Owner not verified yet")
	code := e.otp(p, 1)

	b.Open("/senders")
	b.Fill("#otp-"+n, otherCode(code))
	if st := b.Submit("#verify-" + n); st != http.StatusUnprocessableEntity {
		t.Fatalf("wrong code: status %d, want 422", st)
	}
	b.WaitText("#sender-error-"+n, "The code is wrong. 4 attempt(s) left.")
	if st := b.Eval(`document.getElementById("sender-` + n + `").dataset.status`); st != "pending_verification" {
		t.Fatalf("after a wrong code the number is %s", st)
	}
	b.Screenshot("12-wrong-code")

	// A new code within the minute is refused, and the current code stays.
	if st := b.Submit("#resend-" + n); st != http.StatusTooManyRequests {
		t.Fatalf("resend at once: status %d, want 429", st)
	}
	b.WaitText("#sender-error-"+n, "A new code can be requested once every")

	// The right code: accepted, but the owner is not verified.
	b.Fill("#otp-"+n, code)
	if st := b.Submit("#verify-" + n); st != http.StatusOK {
		t.Fatalf("right code: %d", st)
	}
	b.WaitVisible(`#sender-` + n + `[data-status="pending_account_verification"]`)
	b.WaitText(".notice", "must now verify their account")
	b.WaitText("#sender-"+n+" .next", "Nothing to do here")
	b.WaitText("#badge-"+n, "Owner not verified")
	if b.Has("#otp-"+n) || b.Has("#resend-"+n) {
		t.Fatal("a number waiting for its owner still offers the code forms")
	}
	b.Screenshot("13-owner-not-verified")

	// The owner verifies on the network; the sweep activates the number.
	if _, err := e.net.VerifyAccount(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	e.eventuallyPage("/senders", `#sender-`+n+`[data-status="active"]`, 20*time.Second)
	b.WaitText("#badge-"+n, "Active")
}
