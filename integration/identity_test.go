package integration

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// centralPath is the Central API's base path.
const centralPath = "/api/v1/central"

func TestRegisterLoginMe(t *testing.T) {
	t.Parallel()
	e := Start(t, Options{Env: map[string]string{"DEFAULT_DAILY_LIMIT": "777"}})
	email := uniqueEmail("alice")
	r := e.Do(Request{Method: http.MethodPost, Path: centralPath + "/register", Body: map[string]any{
		"organization_name": "  Acme  ", "name": "Alice", "email": "  " + strings.ToUpper(email) + " ", "password": "a long enough password",
	}})
	if r.Status != http.StatusCreated {
		t.Fatalf("register = %d %s", r.Status, r.Body)
	}
	m := r.Map(t)
	user, org := m["user"].(map[string]any), m["organization"].(map[string]any)
	if user["email"] != email || user["name"] != "Alice" || user["role"] != "owner" ||
		org["name"] != "Acme" || org["subscription_status"] != "trialing" || org["default_daily_limit"] != 777.0 ||
		m["token_type"] != "Bearer" || m["expires_in"] != 900.0 || m["access_token"] == "" || m["refresh_token"] == "" {
		t.Fatalf("register body = %v", m)
	}
	if r.Header.Get("Cache-Control") != "no-store" {
		t.Errorf("register Cache-Control = %q", r.Header.Get("Cache-Control"))
	}
	orgID := int64(org["id"].(float64))

	// The tenant schema exists, recorded on the organization row.
	var schema string
	if err := e.App.DB.Pool.QueryRow(context.Background(),
		`SELECT o.schema_name FROM central.organizations o JOIN information_schema.schemata s ON s.schema_name = o.schema_name WHERE o.id = $1`,
		orgID).Scan(&schema); err != nil || schema != "tenant_"+strconv.FormatInt(orgID, 10) {
		t.Fatalf("tenant schema = %q, %v", schema, err)
	}

	// Login (email matched case-insensitively), then /me with the token.
	r = e.Do(Request{Method: http.MethodPost, Path: centralPath + "/login", Body: map[string]any{"email": email, "password": "a long enough password"}})
	lm := r.Map(t)
	if r.Status != http.StatusOK || lm["token_type"] != "Bearer" || lm["expires_in"] != 900.0 || lm["access_token"] == "" || lm["refresh_token"] == "" {
		t.Fatalf("login = %d %v", r.Status, lm)
	}
	for _, tok := range []string{m["access_token"].(string), lm["access_token"].(string)} {
		r = e.Do(Request{Method: http.MethodGet, Path: centralPath + "/me", Header: Bearer(tok)})
		me := r.Map(t)
		data, _ := me["data"].(map[string]any)
		if r.Status != http.StatusOK || data == nil {
			t.Fatalf("me = %d %s", r.Status, r.Body)
		}
		mo := data["organization"].(map[string]any)
		if data["role"] != "owner" || data["user"].(map[string]any)["email"] != email ||
			mo["subscription_status"] != "trialing" || mo["default_daily_limit"] != 777.0 ||
			data["subscription"].(map[string]any)["status"] != "trialing" {
			t.Fatalf("me = %v", data)
		}
	}
}

func TestRegisterValidation(t *testing.T) {
	t.Parallel()
	e := Start(t, Options{})
	valid := func() map[string]any {
		return map[string]any{"organization_name": "Acme", "name": "Bob", "email": uniqueEmail("bob"), "password": "twelve chars!"}
	}
	tests := []struct {
		name   string
		change func(map[string]any)
		fields []string
	}{
		{"organization_name missing", func(b map[string]any) { delete(b, "organization_name") }, []string{"organization_name"}},
		{"organization_name blank", func(b map[string]any) { b["organization_name"] = "   " }, []string{"organization_name"}},
		{"name missing", func(b map[string]any) { delete(b, "name") }, []string{"name"}},
		{"name too long", func(b map[string]any) { b["name"] = string(make([]byte, 201)) }, []string{"name"}},
		{"email missing", func(b map[string]any) { delete(b, "email") }, []string{"email"}},
		{"email invalid", func(b map[string]any) { b["email"] = "not-an-email" }, []string{"email"}},
		{"email with display name", func(b map[string]any) { b["email"] = "Bob <bob@example.com>" }, []string{"email"}},
		{"password short", func(b map[string]any) { b["password"] = "eleven char" }, []string{"password"}},
		{"password missing", func(b map[string]any) { delete(b, "password") }, []string{"password"}},
		{"everything missing", func(b map[string]any) { clear(b) }, []string{"organization_name", "name", "email", "password"}},
		{"name not a string", func(b map[string]any) { b["name"] = 42 }, []string{"name"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := valid()
			tt.change(body)
			r := e.Do(Request{Method: http.MethodPost, Path: centralPath + "/register", Body: body})
			m := r.Map(t)
			errs, _ := m["errors"].(map[string]any)
			if r.Status != http.StatusUnprocessableEntity || m["code"] != "validation_failed" || len(errs) != len(tt.fields) {
				t.Fatalf("= %d %v", r.Status, m)
			}
			for _, f := range tt.fields {
				if errs[f] == nil {
					t.Errorf("no error for %s: %v", f, errs)
				}
			}
		})
	}
	var orgs int
	if err := e.App.DB.Pool.QueryRow(context.Background(), `SELECT count(*) FROM central.organizations`).Scan(&orgs); err != nil || orgs != 0 {
		t.Fatalf("organizations after invalid registrations = %d, %v", orgs, err)
	}
}

// countOrgsAndSchemas counts organization rows and tenant schemas.
func countOrgsAndSchemas(t *testing.T, e *Env) (orgs, schemas int) {
	t.Helper()
	ctx := context.Background()
	if err := e.App.DB.Pool.QueryRow(ctx, `SELECT count(*) FROM central.organizations`).Scan(&orgs); err != nil {
		t.Fatal(err)
	}
	if err := e.App.DB.Pool.QueryRow(ctx, `SELECT count(*) FROM information_schema.schemata WHERE schema_name LIKE 'tenant\_%'`).Scan(&schemas); err != nil {
		t.Fatal(err)
	}
	return orgs, schemas
}

// A registration that fails (duplicate email, detected after the schema was
// created in the same transaction) leaves no organization row and no schema;
// concurrent registrations with one email make exactly one organization.
func TestRegisterIsAtomic(t *testing.T) {
	t.Parallel()
	e := Start(t, Options{})
	email := uniqueEmail("dup")
	body := map[string]any{"organization_name": "First", "name": "A", "email": email, "password": "twelve chars!"}
	if r := e.Do(Request{Method: http.MethodPost, Path: centralPath + "/register", Body: body}); r.Status != http.StatusCreated {
		t.Fatalf("first = %d %s", r.Status, r.Body)
	}
	body["email"] = "  " + strings.ToUpper(email) // same email, other case
	body["organization_name"] = "Second"
	r := e.Do(Request{Method: http.MethodPost, Path: centralPath + "/register", Body: body})
	if m := r.Map(t); r.Status != http.StatusConflict || m["code"] != "email_taken" {
		t.Fatalf("duplicate = %d %v", r.Status, m)
	}
	if orgs, schemas := countOrgsAndSchemas(t, e); orgs != 1 || schemas != 1 {
		t.Fatalf("after duplicate: %d organizations, %d tenant schemas; want 1 and 1", orgs, schemas)
	}

	// Concurrent: eight registrations of one new email.
	email2 := uniqueEmail("race")
	statuses := make([]int, 8)
	var wg sync.WaitGroup
	for i := range statuses {
		wg.Go(func() {
			statuses[i] = post(t, e, centralPath+"/register", nil, map[string]any{
				"organization_name": "Race " + strconv.Itoa(i), "name": "R", "email": email2, "password": "twelve chars!"}).Status
		})
	}
	wg.Wait()
	created := 0
	for _, s := range statuses {
		switch s {
		case http.StatusCreated:
			created++
		case http.StatusConflict:
		default:
			t.Fatalf("concurrent registration status %d (all: %v)", s, statuses)
		}
	}
	if created != 1 {
		t.Fatalf("concurrent registrations created %d organizations: %v", created, statuses)
	}
	if orgs, schemas := countOrgsAndSchemas(t, e); orgs != 2 || schemas != 2 {
		t.Fatalf("after race: %d organizations, %d tenant schemas; want 2 and 2", orgs, schemas)
	}
}

// Unknown email and wrong password get the same 401; failed logins are
// throttled per account and per address with 429 and Retry-After, exactly
// under concurrency, and the window passes with the clock.
func TestLoginFailuresAndThrottle(t *testing.T) {
	t.Parallel()
	e := Start(t, Options{})
	org := e.Register(t)
	login := func(email, pw string) *Response {
		return e.Do(Request{Method: http.MethodPost, Path: centralPath + "/login", Body: map[string]any{"email": email, "password": pw}})
	}
	wrong := login(org.OwnerEmail, "wrong password!!")
	unknown := login(uniqueEmail("nobody"), "wrong password!!")
	wm, um := wrong.Map(t), unknown.Map(t)
	if wrong.Status != http.StatusUnauthorized || unknown.Status != http.StatusUnauthorized ||
		wm["message"] != um["message"] || wm["code"] != um["code"] || wm["code"] != "invalid_credentials" {
		t.Fatalf("wrong password = %d %v; unknown email = %d %v", wrong.Status, wm, unknown.Status, um)
	}
	if r := login(org.OwnerEmail, ""); r.Status != http.StatusUnprocessableEntity {
		t.Fatalf("empty password = %d %s", r.Status, r.Body)
	}

	// The owner's account has 1 failure; a success clears it.
	if r := login(org.OwnerEmail, org.OwnerPassword); r.Status != http.StatusOK {
		t.Fatalf("correct login = %d %s", r.Status, r.Body)
	}

	// Ten concurrent wrong passwords for one account: exactly 5 are checked
	// (401), the rest are refused unchecked (429 with Retry-After).
	codes := make([]*Response, 10)
	var wg sync.WaitGroup
	for i := range codes {
		wg.Go(func() {
			codes[i] = post(t, e, centralPath+"/login", nil, map[string]any{"email": org.OwnerEmail, "password": "wrong password!!"})
		})
	}
	wg.Wait()
	var n401, n429 int
	for _, r := range codes {
		switch r.Status {
		case http.StatusUnauthorized:
			n401++
		case http.StatusTooManyRequests:
			n429++
			if ra, err := strconv.Atoi(r.Header.Get("Retry-After")); err != nil || ra < 1 || ra > 900 {
				t.Errorf("Retry-After = %q", r.Header.Get("Retry-After"))
			}
		default:
			t.Fatalf("status %d %s", r.Status, r.Body)
		}
	}
	if n401 != 5 || n429 != 5 {
		t.Fatalf("concurrent failures: %d × 401, %d × 429; want 5 and 5", n401, n429)
	}
	// Locked: even the right password is refused until the window passes.
	if r := login(org.OwnerEmail, org.OwnerPassword); r.Status != http.StatusTooManyRequests {
		t.Fatalf("correct password while locked = %d %s", r.Status, r.Body)
	}
	e.Clock.Advance(15*time.Minute + time.Second)
	if r := login(org.OwnerEmail, org.OwnerPassword); r.Status != http.StatusOK {
		t.Fatalf("correct password after the window = %d %s", r.Status, r.Body)
	}

	// Per address: 20 failures in a window from one address, spread over
	// accounts that are each under their own limit; the 21st is refused.
	for i := range 20 {
		if r := login(uniqueEmail("spray"+strconv.Itoa(i%5)), "wrong password!!"); r.Status != http.StatusUnauthorized {
			t.Fatalf("spray %d = %d %s", i, r.Status, r.Body)
		}
	}
	r := login(uniqueEmail("fresh"), "wrong password!!")
	if r.Status != http.StatusTooManyRequests || r.Header.Get("Retry-After") == "" || r.Map(t)["code"] != "too_many_login_attempts" {
		t.Fatalf("21st failure from one address = %d %s", r.Status, r.Body)
	}
}

func TestMembers(t *testing.T) {
	t.Parallel()
	e := Start(t, Options{})
	org := e.Register(t)
	other := e.Register(t)
	users := centralPath + "/users"

	addUser := func(as map[string]string, role string) (*Response, string) {
		email := uniqueEmail(role)
		return e.Do(Request{Method: http.MethodPost, Path: users, Header: as, Body: map[string]any{
			"name": "New " + role, "email": email, "role": role, "password": "initial password"}}), email
	}
	loginAs := func(email string) map[string]string {
		r := e.Do(Request{Method: http.MethodPost, Path: centralPath + "/login", Body: map[string]any{"email": email, "password": "initial password"}})
		if r.Status != http.StatusOK {
			t.Fatalf("login %s = %d %s", email, r.Status, r.Body)
		}
		return Bearer(r.Map(t)["access_token"].(string))
	}
	idOf := func(r *Response) int64 { return int64(r.Map(t)["data"].(map[string]any)["id"].(float64)) }

	r, adminEmail := addUser(org.Bearer(), "admin")
	if r.Status != http.StatusCreated || r.Map(t)["data"].(map[string]any)["role"] != "admin" {
		t.Fatalf("owner adds admin = %d %s", r.Status, r.Body)
	}
	adminID := idOf(r)
	admin := loginAs(adminEmail)
	r, memberEmail := addUser(admin, "member")
	if r.Status != http.StatusCreated {
		t.Fatalf("admin adds member = %d %s", r.Status, r.Body)
	}
	memberID := idOf(r)
	member := loginAs(memberEmail)

	if r, _ := addUser(admin, "owner"); r.Status != http.StatusForbidden {
		t.Fatalf("admin adds owner = %d %s", r.Status, r.Body)
	}
	if r, _ := addUser(member, "member"); r.Status != http.StatusForbidden || r.Map(t)["code"] != "insufficient_role" {
		t.Fatalf("member adds member = %d %s", r.Status, r.Body)
	}
	if r := e.Do(Request{Method: http.MethodPost, Path: users, Header: org.Bearer(), Body: map[string]any{
		"name": "X", "email": org.OwnerEmail, "role": "member", "password": "initial password"}}); r.Status != http.StatusConflict {
		t.Fatalf("add existing email = %d %s", r.Status, r.Body)
	}
	r = e.Do(Request{Method: http.MethodPost, Path: users, Header: org.Bearer(), Body: map[string]any{"role": "king", "password": "short"}})
	if errs, _ := r.Map(t)["errors"].(map[string]any); r.Status != http.StatusUnprocessableEntity || len(errs) != 4 {
		t.Fatalf("invalid member = %d %s", r.Status, r.Body)
	}

	// Members see the list; it holds only this organization's users.
	r = e.Do(Request{Method: http.MethodGet, Path: users + "?limit=2", Header: member})
	var page struct {
		Data []struct {
			ID   int64  `json:"id"`
			Role string `json:"role"`
		} `json:"data"`
		NextCursor *string `json:"next_cursor"`
	}
	r.JSON(t, &page)
	if r.Status != http.StatusOK || len(page.Data) != 2 || page.NextCursor == nil {
		t.Fatalf("members page 1 = %d %s", r.Status, r.Body)
	}
	r = e.Do(Request{Method: http.MethodGet, Path: users + "?limit=2&cursor=" + *page.NextCursor, Header: member})
	r.JSON(t, &page)
	if r.Status != http.StatusOK || len(page.Data) != 1 || page.NextCursor != nil || page.Data[0].ID != org.OwnerID {
		t.Fatalf("members page 2 = %d %s", r.Status, r.Body)
	}

	// Another organization's user is 404; a member cannot remove; an admin
	// cannot remove an owner; the last owner cannot be removed.
	if r := e.Do(Request{Method: http.MethodDelete, Path: users + "/" + strconv.FormatInt(other.OwnerID, 10), Header: org.Bearer()}); r.Status != http.StatusNotFound {
		t.Fatalf("remove other org's user = %d %s", r.Status, r.Body)
	}
	if r := e.Do(Request{Method: http.MethodDelete, Path: users + "/" + strconv.FormatInt(adminID, 10), Header: member}); r.Status != http.StatusForbidden {
		t.Fatalf("member removes admin = %d %s", r.Status, r.Body)
	}
	if r := e.Do(Request{Method: http.MethodDelete, Path: users + "/" + strconv.FormatInt(org.OwnerID, 10), Header: admin}); r.Status != http.StatusForbidden {
		t.Fatalf("admin removes owner = %d %s", r.Status, r.Body)
	}
	r = e.Do(Request{Method: http.MethodDelete, Path: users + "/" + strconv.FormatInt(org.OwnerID, 10), Header: org.Bearer()})
	if r.Status != http.StatusUnprocessableEntity || r.Map(t)["code"] != "last_owner" {
		t.Fatalf("remove last owner = %d %s", r.Status, r.Body)
	}

	// A removed member's token stops working at once.
	if r := e.Do(Request{Method: http.MethodDelete, Path: users + "/" + strconv.FormatInt(memberID, 10), Header: admin}); r.Status != http.StatusNoContent {
		t.Fatalf("admin removes member = %d %s", r.Status, r.Body)
	}
	if r := e.Do(Request{Method: http.MethodGet, Path: centralPath + "/me", Header: member}); r.Status != http.StatusUnauthorized {
		t.Fatalf("removed member's me = %d %s", r.Status, r.Body)
	}
	if r := e.Do(Request{Method: http.MethodPost, Path: centralPath + "/login", Body: map[string]any{"email": memberEmail, "password": "initial password"}}); r.Status != http.StatusUnauthorized {
		t.Fatalf("removed member's login = %d %s", r.Status, r.Body)
	}

	// With a second owner, the first can go.
	r, owner2Email := addUser(org.Bearer(), "owner")
	if r.Status != http.StatusCreated {
		t.Fatalf("owner adds owner = %d %s", r.Status, r.Body)
	}
	owner2 := loginAs(owner2Email)
	if r := e.Do(Request{Method: http.MethodDelete, Path: users + "/" + strconv.FormatInt(org.OwnerID, 10), Header: owner2}); r.Status != http.StatusNoContent {
		t.Fatalf("second owner removes first = %d %s", r.Status, r.Body)
	}
}

// Dashboard key management: members list, owners and admins change; reveal
// works only with encrypted storage and is audited.
func TestCentralAPIKeys(t *testing.T) {
	t.Parallel()
	e := Start(t, Options{Env: map[string]string{"API_KEY_ENCRYPTION_KEY": "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"}})
	org := e.Register(t)
	other := e.Register(t)
	keys := centralPath + "/api-keys"

	r := e.Do(Request{Method: http.MethodPost, Path: usersPath, Header: org.Bearer(), Body: map[string]any{
		"name": "M", "email": uniqueEmail("m"), "role": "member", "password": "initial password"}})
	if r.Status != http.StatusCreated {
		t.Fatalf("add member = %d %s", r.Status, r.Body)
	}
	memberEmail := r.Map(t)["data"].(map[string]any)["email"].(string)
	r = e.Do(Request{Method: http.MethodPost, Path: centralPath + "/login", Body: map[string]any{"email": memberEmail, "password": "initial password"}})
	member := Bearer(r.Map(t)["access_token"].(string))

	if r := e.Do(Request{Method: http.MethodGet, Path: keys, Header: member}); r.Status != http.StatusOK {
		t.Fatalf("member lists keys = %d %s", r.Status, r.Body)
	}
	for _, req := range []Request{
		{Method: http.MethodPost, Path: keys, Body: map[string]any{"name": "x", "scopes": []string{"*"}}},
		{Method: http.MethodDelete, Path: keys + "/" + strconv.FormatInt(org.APIKeyID, 10)},
		{Method: http.MethodPost, Path: keys + "/" + strconv.FormatInt(org.APIKeyID, 10) + "/reveal"},
	} {
		req.Header = member
		if r := e.Do(req); r.Status != http.StatusForbidden {
			t.Fatalf("member %s %s = %d %s", req.Method, req.Path, r.Status, r.Body)
		}
	}

	// Reveal returns the key created earlier, writes an audit row each time.
	for range 2 {
		r = e.Do(Request{Method: http.MethodPost, Path: keys + "/" + strconv.FormatInt(org.APIKeyID, 10) + "/reveal", Header: org.Bearer()})
		if m := r.Map(t); r.Status != http.StatusOK || m["plain_text_key"] != org.APIKey || m["id"] != float64(org.APIKeyID) {
			t.Fatalf("reveal = %d %s", r.Status, r.Body)
		}
	}
	var audits int
	if err := e.App.DB.Pool.QueryRow(context.Background(), `SELECT count(*) FROM central.audit_log
		WHERE organization_id = $1 AND actor_user_id = $2 AND action = 'api_key.reveal' AND target = $3`,
		org.ID, org.OwnerID, "api_key:"+strconv.FormatInt(org.APIKeyID, 10)).Scan(&audits); err != nil || audits != 2 {
		t.Fatalf("reveal audit rows = %d, %v; want 2", audits, err)
	}
	// Another organization's key is 404, for reveal and revoke alike.
	for _, req := range []Request{
		{Method: http.MethodPost, Path: keys + "/" + strconv.FormatInt(other.APIKeyID, 10) + "/reveal"},
		{Method: http.MethodDelete, Path: keys + "/" + strconv.FormatInt(other.APIKeyID, 10)},
	} {
		req.Header = org.Bearer()
		if r := e.Do(req); r.Status != http.StatusNotFound {
			t.Fatalf("%s other org's key = %d %s", req.Method, r.Status, r.Body)
		}
	}
	// Revoked keys are not revealed; the revoked key stops working at once.
	if r := e.Do(Request{Method: http.MethodDelete, Path: keys + "/" + strconv.FormatInt(org.APIKeyID, 10), Header: org.Bearer()}); r.Status != http.StatusNoContent {
		t.Fatalf("revoke = %d %s", r.Status, r.Body)
	}
	if r := e.Do(Request{Method: http.MethodGet, Path: "/api/v1/me", Header: org.Key()}); r.Status != http.StatusUnauthorized {
		t.Fatalf("revoked key = %d %s", r.Status, r.Body)
	}
	r = e.Do(Request{Method: http.MethodPost, Path: keys + "/" + strconv.FormatInt(org.APIKeyID, 10) + "/reveal", Header: org.Bearer()})
	if r.Status != http.StatusUnprocessableEntity || r.Map(t)["code"] != "api_key_not_active" {
		t.Fatalf("reveal revoked = %d %s", r.Status, r.Body)
	}
	// The other org's key was untouched.
	if r := e.Do(Request{Method: http.MethodGet, Path: "/api/v1/me", Header: other.Key()}); r.Status != http.StatusOK {
		t.Fatalf("other org's key = %d %s", r.Status, r.Body)
	}
}

func TestRevealNeedsEncryptedStorage(t *testing.T) {
	t.Parallel()
	e := Start(t, Options{})
	org := e.Register(t)
	r := e.Do(Request{Method: http.MethodPost, Path: centralPath + "/api-keys/" + strconv.FormatInt(org.APIKeyID, 10) + "/reveal", Header: org.Bearer()})
	if r.Status != http.StatusUnprocessableEntity || r.Map(t)["code"] != "reveal_unavailable" {
		t.Fatalf("reveal without encryption key = %d %s", r.Status, r.Body)
	}
	var sealed int
	if err := e.App.DB.Pool.QueryRow(context.Background(), `SELECT count(*) FROM central.api_keys WHERE key_sealed IS NOT NULL`).Scan(&sealed); err != nil || sealed != 0 {
		t.Fatalf("sealed copies without an encryption key = %d, %v", sealed, err)
	}
}

// usersPath is the Central API members collection.
const usersPath = centralPath + "/users"

// post sends a JSON POST from any goroutine (it reports transport failures
// with t.Error, never t.Fatal).
func post(t *testing.T, e *Env, path string, header map[string]string, body any) *Response {
	t.Helper()
	r, err := e.Send(Request{Method: http.MethodPost, Path: path, Header: header, Body: body})
	if err != nil {
		t.Error(err)
		return &Response{}
	}
	return r
}
