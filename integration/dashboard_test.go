package integration

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/bizmsg/platform/web"
)

// Dashboard tests over plain HTTP (package web): sessions, CSRF, cookies,
// secrets kept out of URLs, and the pages reading what the APIs wrote.
// Dashboard pages are HTML outside /api, so these tests use their own
// client (a cookie jar, form posts, redirects not followed) rather than
// Env.Do and its OpenAPI conformance check.

// webClient is a browser-like HTTP client of the dashboard.
type webClient struct {
	t    *testing.T
	e    *Env
	http *http.Client
	// seen records every URL requested and every redirect target, to prove
	// that no secret travels in a URL.
	seen []string
}

func newWebClient(t *testing.T, e *Env) *webClient {
	t.Helper()
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &webClient{t: t, e: e, http: &http.Client{
		Jar:           jar,
		Timeout:       30 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
}

// webResponse is a finished dashboard exchange.
type webResponse struct {
	Status int
	Header http.Header
	Body   string
}

// do sends req with the header set and records its URL and redirect.
func (w *webClient) do(req *http.Request, header map[string]string) *webResponse {
	w.t.Helper()
	for k, v := range header {
		req.Header.Set(k, v)
	}
	w.seen = append(w.seen, req.URL.String())
	resp, err := w.http.Do(req)
	if err != nil {
		w.t.Fatalf("%s %s: %v", req.Method, req.URL.Path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		w.t.Fatal(err)
	}
	if loc := resp.Header.Get("Location"); loc != "" {
		w.seen = append(w.seen, loc)
	}
	return &webResponse{Status: resp.StatusCode, Header: resp.Header, Body: string(b)}
}

func (w *webClient) get(path string, header ...map[string]string) *webResponse {
	w.t.Helper()
	req, err := http.NewRequestWithContext(w.t.Context(), http.MethodGet, w.e.Server.URL+path, nil)
	if err != nil {
		w.t.Fatal(err)
	}
	return w.do(req, merge(header))
}

// post sends form as application/x-www-form-urlencoded.
func (w *webClient) post(path string, form url.Values, header ...map[string]string) *webResponse {
	w.t.Helper()
	req, err := http.NewRequestWithContext(w.t.Context(), http.MethodPost, w.e.Server.URL+path, strings.NewReader(form.Encode()))
	if err != nil {
		w.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return w.do(req, merge(header))
}

func merge(hs []map[string]string) map[string]string {
	out := map[string]string{}
	for _, h := range hs {
		for k, v := range h {
			out[k] = v
		}
	}
	return out
}

var csrfRE = regexp.MustCompile(`name="csrf_token" value="([^"]+)"`)

// csrf returns the CSRF token of the page at path.
func (w *webClient) csrf(path string) string {
	w.t.Helper()
	r := w.get(path)
	if r.Status != http.StatusOK {
		w.t.Fatalf("GET %s = %d", path, r.Status)
	}
	m := csrfRE.FindStringSubmatch(r.Body)
	if m == nil {
		w.t.Fatalf("no CSRF token on %s", path)
	}
	return m[1]
}

// cookie returns the jar's value of the named dashboard cookie.
func (w *webClient) cookie(name string) string {
	u, _ := url.Parse(w.e.Server.URL)
	for _, c := range w.http.Jar.Cookies(u) {
		if c.Name == name {
			return c.Value
		}
	}
	return ""
}

// webAccount is who a webClient signed up as.
type webAccount struct {
	Email, Password, Org string
}

// signup creates an organization through the dashboard's sign-up form and
// leaves the client signed in.
func (w *webClient) signup() webAccount {
	w.t.Helper()
	a := webAccount{Email: uniqueEmail("web"), Password: "correct horse battery staple", Org: "Web Org"}
	r := w.post("/signup", url.Values{
		"csrf_token": {w.csrf("/signup")}, "organization_name": {a.Org}, "name": {"Web Owner"},
		"email": {a.Email}, "password": {a.Password},
	})
	if r.Status != http.StatusSeeOther || r.Header.Get("Location") != "/?ok=welcome" {
		w.t.Fatalf("signup = %d %s %s", r.Status, r.Header.Get("Location"), r.Body)
	}
	return a
}

// login signs in through the log-in form.
func (w *webClient) login(email, password string) *webResponse {
	w.t.Helper()
	return w.post("/login", url.Values{"csrf_token": {w.csrf("/login")}, "email": {email}, "password": {password}})
}

// wantPage checks a response's status and that its body contains want.
func wantPage(t *testing.T, r *webResponse, status int, want ...string) {
	t.Helper()
	if r.Status != status {
		t.Fatalf("status %d, want %d; body: %.600s", r.Status, status, r.Body)
	}
	for _, s := range want {
		if !strings.Contains(r.Body, s) {
			t.Fatalf("page does not contain %q: %.3000s", s, r.Body)
		}
	}
}

// sessions counts the stored sessions of a user's email.
func sessions(t *testing.T, e *Env, email string) int {
	t.Helper()
	var n int
	if err := e.App.DB.Pool.QueryRow(context.Background(), `SELECT count(*) FROM central.web_sessions s
		JOIN central.users u ON u.id = s.user_id WHERE u.email = $1`, email).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// A form posted without the CSRF token (or with a wrong one, one of
// another purpose, or from another site) is refused with 403 and changes
// nothing; the same form with the page's token goes through.
func TestDashboardCSRF(t *testing.T) {
	t.Parallel()
	e := Start(t, Options{})
	w := newWebClient(t, e)
	w.signup()
	token := w.csrf("/senders")
	preToken := newWebClient(t, e).csrf("/login")

	for _, tc := range []struct {
		name   string
		form   url.Values
		header map[string]string
	}{
		{"no token", url.Values{"phone": {"+14155550177"}}, nil},
		{"empty token", url.Values{"phone": {"+14155550177"}, "csrf_token": {""}}, nil},
		{"wrong token", url.Values{"phone": {"+14155550177"}, "csrf_token": {strings.Repeat("A", len(token))}}, nil},
		{"log-in token", url.Values{"phone": {"+14155550177"}, "csrf_token": {preToken}}, nil},
		{"other site", url.Values{"phone": {"+14155550177"}, "csrf_token": {token}}, map[string]string{"Origin": "https://evil.example"}},
		{"cross-site fetch", url.Values{"phone": {"+14155550177"}, "csrf_token": {token}}, map[string]string{"Sec-Fetch-Site": "cross-site"}},
	} {
		r := w.post("/senders", tc.form, tc.header)
		wantPage(t, r, http.StatusForbidden, "Form expired")
		if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/html") {
			t.Fatalf("%s: refusal Content-Type %q, want an HTML page", tc.name, ct)
		}
	}
	if r := w.get("/senders"); strings.Contains(r.Body, "14155550177") {
		t.Fatal("a refused form registered a sender number")
	}
	// Logging out is a form too.
	wantPage(t, w.post("/logout", url.Values{}), http.StatusForbidden, "Form expired")
	wantPage(t, w.get("/"), http.StatusOK, "Overview")

	// The page's own token works (same origin allowed).
	r := w.post("/senders", url.Values{"phone": {"+14155550177"}, "csrf_token": {token}}, map[string]string{"Origin": e.Server.URL})
	if r.Status != http.StatusSeeOther {
		t.Fatalf("with the token: %d %.500s", r.Status, r.Body)
	}
	wantPage(t, w.get("/senders"), http.StatusOK, "&#43;14155550177", `data-status="pending_verification"`)

	// Signed out, the log-in and sign-up forms need the token of the
	// pre-session cookie: none, or one of another browser, is refused.
	other := newWebClient(t, e)
	other.csrf("/login")
	for _, form := range []url.Values{
		{"email": {"x@example.com"}, "password": {"whatever password"}},
		{"email": {"x@example.com"}, "password": {"whatever password"}, "csrf_token": {preToken}},
	} {
		wantPage(t, other.post("/login", form), http.StatusForbidden, "Form expired")
		wantPage(t, other.post("/signup", form), http.StatusForbidden, "Form expired")
	}
}

// Logging out deletes the session: the old cookie opens nothing afterwards,
// for reading or for posting with its old CSRF token.
func TestDashboardLogoutEndsSession(t *testing.T) {
	t.Parallel()
	e := Start(t, Options{})
	w := newWebClient(t, e)
	acct := w.signup()
	old := w.cookie(web.SessionCookie)
	token := w.csrf("/")
	if old == "" || sessions(t, e, acct.Email) != 1 {
		t.Fatalf("after sign-up: cookie %q, %d sessions", old, sessions(t, e, acct.Email))
	}
	r := w.post("/logout", url.Values{"csrf_token": {token}})
	if r.Status != http.StatusSeeOther || r.Header.Get("Location") != "/login?ok=signed_out" {
		t.Fatalf("logout = %d %s", r.Status, r.Header.Get("Location"))
	}
	if !strings.Contains(strings.Join(r.Header.Values("Set-Cookie"), "\n"), web.SessionCookie+"=;") {
		t.Fatalf("logout does not clear the cookie: %v", r.Header.Values("Set-Cookie"))
	}
	if n := sessions(t, e, acct.Email); n != 0 {
		t.Fatalf("%d sessions after logout, want 0", n)
	}
	if w.cookie(web.SessionCookie) != "" {
		t.Fatal("the browser still holds the session cookie")
	}

	// Someone who kept the old cookie gets nothing.
	replay := newWebClient(t, e)
	oldCookie := map[string]string{"Cookie": web.SessionCookie + "=" + old}
	for _, path := range []string{"/", "/senders", "/keys", "/messages", "/members", "/start"} {
		r := replay.get(path, oldCookie)
		if r.Status != http.StatusSeeOther || r.Header.Get("Location") != "/login" {
			t.Fatalf("GET %s with the old cookie = %d %s", path, r.Status, r.Header.Get("Location"))
		}
	}
	r = replay.post("/keys", url.Values{"csrf_token": {token}, "name": {"k"}, "scopes": {"*"}}, oldCookie)
	wantPage(t, r, http.StatusUnauthorized, "Log in again")
	var keys int
	if err := e.App.DB.Pool.QueryRow(context.Background(), `SELECT count(*) FROM central.api_keys`).Scan(&keys); err != nil || keys != 0 {
		t.Fatalf("%d keys (%v) after a post with a dead session", keys, err)
	}

	// Logging in again gives a new session, not the old one.
	r = w.login(acct.Email, acct.Password)
	if r.Status != http.StatusSeeOther || r.Header.Get("Location") != "/" {
		t.Fatalf("login = %d %s %.300s", r.Status, r.Header.Get("Location"), r.Body)
	}
	if now := w.cookie(web.SessionCookie); now == "" || now == old {
		t.Fatalf("session cookie after a new login: %q (old %q)", now, old)
	}
	wantPage(t, w.get("/"), http.StatusOK, "Overview", "Web Owner")
}

// Cookies are HttpOnly, SameSite=Lax, host-only for the whole site, Secure
// behind TLS; the database holds only the token's SHA-256; sessions end when
// idle and at their absolute lifetime.
func TestDashboardSessionCookies(t *testing.T) {
	t.Parallel()
	e := Start(t, Options{})
	w := newWebClient(t, e)

	check := func(r *webResponse, name string, secure bool) string {
		t.Helper()
		for _, raw := range r.Header.Values("Set-Cookie") {
			c, err := http.ParseSetCookie(raw)
			if err != nil || c.Name != name || c.Value == "" {
				continue
			}
			if !c.HttpOnly || c.SameSite != http.SameSiteLaxMode || c.Path != "/" || c.Domain != "" || c.Secure != secure {
				t.Fatalf("cookie %q: want HttpOnly, SameSite=Lax, Path=/, no Domain, Secure=%v", raw, secure)
			}
			return c.Value
		}
		t.Fatalf("no %s cookie in %v", name, r.Header.Values("Set-Cookie"))
		return ""
	}
	check(w.get("/login"), web.PreSessionCookie, false)
	check(newWebClient(t, e).get("/signup", map[string]string{"X-Forwarded-Proto": "https"}), web.PreSessionCookie, true)

	acct := webAccount{Email: uniqueEmail("cookie"), Password: "correct horse battery staple"}
	r := w.post("/signup", url.Values{"csrf_token": {w.csrf("/signup")}, "organization_name": {"Cookie Org"},
		"name": {"Owner"}, "email": {acct.Email}, "password": {acct.Password}})
	token := check(r, web.SessionCookie, false)
	if len(token) < 43 {
		t.Fatalf("session token %q is shorter than 32 bytes of base64", token)
	}
	sum := sha256.Sum256([]byte(token))
	var stored int
	if err := e.App.DB.Pool.QueryRow(context.Background(),
		`SELECT count(*) FROM central.web_sessions WHERE token_hash = $1`, sum[:]).Scan(&stored); err != nil || stored != 1 {
		t.Fatalf("sessions stored by hash: %d (%v), want 1", stored, err)
	}
	var plain int
	if err := e.App.DB.Pool.QueryRow(context.Background(),
		`SELECT count(*) FROM central.web_sessions WHERE position(convert_to($1, 'UTF8') in token_hash) > 0`, token).Scan(&plain); err != nil || plain != 0 {
		t.Fatalf("the plain token is stored: %d (%v)", plain, err)
	}

	// Pages carry the security headers.
	page := w.get("/")
	for h, want := range map[string]string{
		"Cache-Control":          "no-store",
		"X-Frame-Options":        "DENY",
		"X-Content-Type-Options": "nosniff",
		"Referrer-Policy":        "same-origin",
	} {
		if got := page.Header.Get(h); got != want {
			t.Fatalf("%s: %q, want %q", h, got, want)
		}
	}
	if csp := page.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "frame-ancestors 'none'") || !strings.Contains(csp, "script-src 'self'") {
		t.Fatalf("Content-Security-Policy %q", csp)
	}

	// Idle for longer than the idle timeout: signed out.
	e.Clock.Advance(web.DefaultIdleTimeout - time.Minute)
	wantPage(t, w.get("/"), http.StatusOK, "Overview")
	e.Clock.Advance(web.DefaultIdleTimeout - time.Minute)
	wantPage(t, w.get("/"), http.StatusOK, "Overview")
	e.Clock.Advance(web.DefaultIdleTimeout + time.Second)
	if r := w.get("/"); r.Status != http.StatusSeeOther || r.Header.Get("Location") != "/login" {
		t.Fatalf("after the idle timeout: %d %s", r.Status, r.Header.Get("Location"))
	}

	// Active all along, still signed out at the absolute lifetime.
	w.login(acct.Email, acct.Password)
	for elapsed := time.Duration(0); elapsed < web.DefaultMaxAge-time.Hour; elapsed += time.Hour {
		wantPage(t, w.get("/"), http.StatusOK, "Overview")
		e.Clock.Advance(time.Hour)
	}
	e.Clock.Advance(time.Hour + time.Second)
	if r := w.get("/senders"); r.Status != http.StatusSeeOther {
		t.Fatalf("after the absolute lifetime: %d", r.Status)
	}

	// The housekeeping purge deletes the ended sessions, past their
	// lifetime or idle, and keeps the live one.
	purge := func(want int64) {
		t.Helper()
		n, err := web.PurgeSessions(context.Background(), e.App.DB.Bun, e.Clock.Now(), web.DefaultIdleTimeout)
		if err != nil || n != want {
			t.Fatalf("PurgeSessions = %d, %v; want %d", n, err, want)
		}
	}
	purge(1) // past its lifetime, not idle
	newWebClient(t, e).login(acct.Email, acct.Password)
	purge(0)
	if n := sessions(t, e, acct.Email); n != 1 {
		t.Fatalf("%d sessions after the purge, want the live one", n)
	}
	e.Clock.Advance(web.DefaultIdleTimeout + time.Second)
	purge(1) // idle, not past its lifetime
	if n := sessions(t, e, acct.Email); n != 0 {
		t.Fatalf("%d sessions after the purge, want none", n)
	}
}

// Secrets never travel in a URL: passwords, codes and keys are posted, the
// key comes back in the body of the POST (not cacheable), redirects carry
// fixed notice codes only, and neither the session token nor a CSRF token
// appears in any URL.
func TestDashboardNoSecretInURL(t *testing.T) {
	t.Parallel()
	e := Start(t, Options{Env: map[string]string{"API_KEY_ENCRYPTION_KEY": strings.Repeat("ab", 32)}})
	w := newWebClient(t, e)
	acct := w.signup()
	token := w.csrf("/keys")

	r := w.post("/keys", url.Values{"csrf_token": {token}, "name": {"CI key"}, "scopes": {"messages.send", "usage.read"}, "expires_in_days": {"30"}})
	wantPage(t, r, http.StatusOK, "API key created", "messages.send")
	key := regexp.MustCompile(`id="plain-key"[^>]*value="([^"]+)"`).FindStringSubmatch(r.Body)
	if key == nil {
		t.Fatalf("no key on the page: %.2000s", r.Body)
	}
	if cc := r.Header.Get("Cache-Control"); cc != "no-store" {
		t.Fatalf("key page Cache-Control %q", cc)
	}
	// The key works on the Tenant API, within its scopes.
	if resp := e.Do(Request{Method: http.MethodGet, Path: "/api/v1/usage", Header: KeyHeader(key[1])}); resp.Status != http.StatusOK {
		t.Fatalf("usage with the new key = %d %s", resp.Status, resp.Body)
	}
	if resp := e.Do(Request{Method: http.MethodGet, Path: "/api/v1/messages", Header: KeyHeader(key[1])}); resp.Status != http.StatusForbidden {
		t.Fatalf("messages with a key without messages.read = %d %s", resp.Status, resp.Body)
	}
	// Not on the list page, but "Show key" (a POST) gives it again.
	list := w.get("/keys")
	wantPage(t, list, http.StatusOK, "CI key", "Show key")
	if strings.Contains(list.Body, key[1]) {
		t.Fatal("the keys page shows the plain key")
	}
	id := regexp.MustCompile(`action="/keys/(\d+)/reveal"`).FindStringSubmatch(list.Body)
	if id == nil {
		t.Fatal("no Show key form")
	}
	wantPage(t, w.post("/keys/"+id[1]+"/reveal", url.Values{"csrf_token": {token}}), http.StatusOK, key[1])

	// A wrong password and an OTP are posted too.
	w.post("/senders", url.Values{"csrf_token": {token}, "phone": {"+14155550111"}})
	w.post("/senders/1/verify", url.Values{"csrf_token": {token}, "otp": {"123456"}})
	other := newWebClient(t, e)
	wantPage(t, other.login(acct.Email, "wrong password!!"), http.StatusUnauthorized, "The email or password is incorrect.")

	session := w.cookie(web.SessionCookie)
	for _, u := range append(w.seen, other.seen...) {
		for name, secret := range map[string]string{"API key": key[1], "session token": session, "CSRF token": token,
			"password": acct.Password, "wrong password": "wrong password", "OTP": "123456"} {
			if strings.Contains(u, secret) || strings.Contains(u, url.QueryEscape(secret)) {
				t.Fatalf("the %s appears in the URL %s", name, u)
			}
		}
	}
	// Forms that carry secrets are POST forms.
	for _, path := range []string{"/login", "/signup"} {
		page := newWebClient(t, e).get(path).Body
		if !strings.Contains(page, `method="post"`) || strings.Contains(page, `method="get"`) {
			t.Fatalf("%s: the form is not a POST form", path)
		}
	}
}

// The dashboard shadows none of the JSON APIs: unknown API paths still get
// the JSON error envelope, operational endpoints still answer JSON.
func TestDashboardLeavesAPIRoutes(t *testing.T) {
	t.Parallel()
	e := Start(t, Options{})
	for _, tc := range []struct {
		method, path string
		status       int
		code         string
	}{
		{http.MethodGet, "/api/v1/no-such-thing", http.StatusNotFound, "not_found"},
		{http.MethodGet, "/api/v1/central/no-such-thing", http.StatusNotFound, "not_found"},
		{http.MethodGet, "/api/v1/me", http.StatusUnauthorized, ""},
		{http.MethodGet, "/api/v1/central/me", http.StatusUnauthorized, ""},
		{http.MethodPost, "/api/v1/central/login", http.StatusUnprocessableEntity, "validation_failed"},
		{http.MethodGet, "/no-such-page", http.StatusNotFound, "not_found"},
	} {
		r := e.Do(Request{Method: tc.method, Path: tc.path, Body: map[string]any{}})
		if r.Status != tc.status || !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
			t.Fatalf("%s %s = %d %s %s", tc.method, tc.path, r.Status, r.Header.Get("Content-Type"), r.Body)
		}
		m := r.Map(t)
		if (tc.code != "" && m["code"] != tc.code) || m["request_id"] == "" {
			t.Fatalf("%s %s: body %s", tc.method, tc.path, r.Body)
		}
	}
	for _, path := range []string{"/healthz", "/readyz"} {
		if r := e.Do(Request{Method: http.MethodGet, Path: path}); r.Status != http.StatusOK || !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
			t.Fatalf("GET %s = %d %s", path, r.Status, r.Header.Get("Content-Type"))
		}
	}
	if r := e.Do(Request{Method: http.MethodGet, Path: "/metrics"}); r.Status != http.StatusOK || !strings.Contains(string(r.Body), "# HELP") {
		t.Fatalf("GET /metrics = %d", r.Status)
	}
	// The dashboard itself: HTML, signed-out visitors sent to the log-in page.
	w := newWebClient(t, e)
	if r := w.get("/"); r.Status != http.StatusSeeOther || r.Header.Get("Location") != "/login" {
		t.Fatalf("GET / signed out = %d %s", r.Status, r.Header.Get("Location"))
	}
	r := w.get("/login")
	wantPage(t, r, http.StatusOK, "<h1>Log in</h1>", `<label for="email">`, `<label for="password">`)
	if !strings.HasPrefix(r.Header.Get("Content-Type"), "text/html") {
		t.Fatalf("log-in page Content-Type %q", r.Header.Get("Content-Type"))
	}
	css := w.get("/static/app.css")
	if css.Status != http.StatusOK || !strings.HasPrefix(css.Header.Get("Content-Type"), "text/css") {
		t.Fatalf("GET /static/app.css = %d %s", css.Status, css.Header.Get("Content-Type"))
	}
	if r := w.get("/static/"); r.Status != http.StatusNotFound {
		t.Fatalf("GET /static/ = %d, want 404 (no listing)", r.Status)
	}
}

// Members and roles: an owner adds a member, who can log in and read
// everything but may not create keys or change limits; the log-in form
// uses the Central API's throttle.
func TestDashboardMembersAndRoles(t *testing.T) {
	t.Parallel()
	e := Start(t, Options{})
	owner := newWebClient(t, e)
	acct := owner.signup()
	token := owner.csrf("/members")
	email := uniqueEmail("member")
	r := owner.post("/members", url.Values{"csrf_token": {token}, "name": {"Mia Member"}, "email": {email},
		"role": {"member"}, "password": {"short"}})
	wantPage(t, r, http.StatusUnprocessableEntity, "Please correct the fields", "password")
	r = owner.post("/members", url.Values{"csrf_token": {token}, "name": {"Mia Member"}, "email": {email},
		"role": {"member"}, "password": {"initial password 1"}})
	if r.Status != http.StatusSeeOther {
		t.Fatalf("add member = %d %.500s", r.Status, r.Body)
	}
	wantPage(t, owner.get("/members?ok=member_added"), http.StatusOK, "Mia Member", email, "Member added")

	member := newWebClient(t, e)
	if r := member.login(email, "initial password 1"); r.Status != http.StatusSeeOther {
		t.Fatalf("member login = %d %.300s", r.Status, r.Body)
	}
	keysPage := member.get("/keys")
	wantPage(t, keysPage, http.StatusOK, "Only owners and admins")
	if strings.Contains(keysPage.Body, `action="/keys"`) {
		t.Fatal("a member sees the key creation form")
	}
	mToken := member.csrf("/keys")
	wantPage(t, member.post("/keys", url.Values{"csrf_token": {mToken}, "name": {"k"}, "scopes": {"*"}}), http.StatusForbidden, "Only owners and admins")
	wantPage(t, member.post("/members", url.Values{"csrf_token": {mToken}, "name": {"X"}, "email": {uniqueEmail("x")},
		"role": {"owner"}, "password": {"initial password 1"}}), http.StatusForbidden)

	// Removing the member ends their session at once.
	id := regexp.MustCompile(`href="/members/(\d+)/remove"`).FindAllStringSubmatch(owner.get("/members").Body, -1)
	var memberID string
	for _, m := range id {
		if page := owner.get("/members/" + m[1] + "/remove"); strings.Contains(page.Body, email) {
			memberID = m[1]
		}
	}
	if memberID == "" {
		t.Fatal("no remove link for the member")
	}
	if r := owner.post("/members/"+memberID+"/remove", url.Values{"csrf_token": {token}}); r.Status != http.StatusSeeOther {
		t.Fatalf("remove = %d %.300s", r.Status, r.Body)
	}
	if r := member.get("/"); r.Status != http.StatusSeeOther {
		t.Fatalf("removed member still signed in: %d", r.Status)
	}

	// The log-in form is throttled like the Central API's login.
	attacker := newWebClient(t, e)
	var last *webResponse
	for i := 0; i < 6; i++ {
		last = attacker.login(acct.Email, fmt.Sprintf("wrong password %d", i))
	}
	wantPage(t, last, http.StatusTooManyRequests, "Too many failed login attempts")
}
