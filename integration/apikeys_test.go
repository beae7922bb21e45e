package integration

import (
	"context"
	"fmt"
	"hash/crc32"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/jackc/pgx/v5"

	"github.com/bizmsg/platform/platform/apikey"
	"github.com/bizmsg/platform/platform/app"
	"github.com/bizmsg/platform/platform/dbtest"
	"github.com/bizmsg/platform/tenant"
)

const (
	tenantKeys = "/api/v1/api-keys"
	tenantMe   = "/api/v1/me"
)

// keyResource is the API key resource (docs/api.md, §API keys).
type keyResource struct {
	ID           int64      `json:"id"`
	Name         string     `json:"name"`
	Prefix       string     `json:"prefix"`
	Scopes       []string   `json:"scopes"`
	Status       string     `json:"status"`
	ExpiresAt    time.Time  `json:"expires_at"`
	LastUsedAt   *time.Time `json:"last_used_at"`
	CreatedAt    time.Time  `json:"created_at"`
	PlainTextKey *string    `json:"plain_text_key"`
}

// createKey creates a key through the Tenant API with the given key.
func createKey(t *testing.T, e *Env, with string, body map[string]any) (*Response, keyResource) {
	t.Helper()
	r := e.Do(Request{Method: http.MethodPost, Path: tenantKeys, Header: KeyHeader(with), Body: body})
	var k keyResource
	if r.Status == http.StatusCreated {
		r.JSON(t, &k)
	}
	return r, k
}

// mustCreateKey creates a key with scopes and returns it, failing on any other answer.
func mustCreateKey(t *testing.T, e *Env, with string, scopes ...string) keyResource {
	t.Helper()
	r, k := createKey(t, e, with, map[string]any{"name": "k " + strings.Join(scopes, ","), "scopes": scopes})
	if r.Status != http.StatusCreated || k.PlainTextKey == nil {
		t.Fatalf("create key %v = %d %s", scopes, r.Status, r.Body)
	}
	return k
}

// listKeys lists every key visible to with.
func listKeys(t *testing.T, e *Env, with string) []keyResource {
	t.Helper()
	var all []keyResource
	path := tenantKeys + "?limit=100"
	for {
		r := e.Do(Request{Method: http.MethodGet, Path: path, Header: KeyHeader(with)})
		var page struct {
			Data       []keyResource `json:"data"`
			NextCursor *string       `json:"next_cursor"`
		}
		if r.Status != http.StatusOK {
			t.Fatalf("list keys = %d %s", r.Status, r.Body)
		}
		r.JSON(t, &page)
		all = append(all, page.Data...)
		if page.NextCursor == nil {
			return all
		}
		path = tenantKeys + "?limit=100&cursor=" + url.QueryEscape(*page.NextCursor)
	}
}

// withChecksum returns body followed by its CRC32 in six base62 characters,
// the API-key checksum.
func withChecksum(body string) string {
	const alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	n := uint64(crc32.ChecksumIEEE([]byte(body)))
	var sum [apikey.ChecksumLength]byte
	for i := len(sum) - 1; i >= 0; i-- {
		sum[i] = alphabet[n%62]
		n /= 62
	}
	return body + string(sum[:])
}

// changeSecret returns key with one character after the prefix changed and
// a valid checksum: well-formed, right prefix, wrong secret.
func changeSecret(key string) string {
	b := []byte(key[:apikey.Length-apikey.ChecksumLength])
	i := apikey.PrefixLength + 3
	if b[i] == 'a' {
		b[i] = 'b'
	} else {
		b[i] = 'a'
	}
	return withChecksum(string(b))
}

// wrongChecksum returns key with its checksum altered.
func wrongChecksum(key string) string {
	last := key[len(key)-1]
	repl := byte('0')
	if last == '0' {
		repl = '1'
	}
	return key[:len(key)-1] + string(repl)
}

// docs/api.md, §Credentials per API and §API keys: missing, malformed,
// wrong, expired and revoked keys get 401; a revoked key is never active
// again.
func TestTenantKeyAuthentication(t *testing.T) {
	t.Parallel()
	e := Start(t, Options{})
	org := e.Register(t)
	me := func(key string) *Response {
		h := map[string]string{}
		if key != "" {
			h = KeyHeader(key)
		}
		return e.Do(Request{Method: http.MethodGet, Path: tenantMe, Header: h})
	}
	unknown, err := apikey.Generate()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		key  string
		code string
	}{
		{"missing", "", "missing_api_key"},
		{"garbage", "hello", "invalid_api_key"},
		{"other product's token", "ghp_" + org.APIKey[4:], "invalid_api_key"},
		{"wrong checksum", wrongChecksum(org.APIKey), "invalid_api_key"},
		{"truncated", org.APIKey[:len(org.APIKey)-1], "invalid_api_key"},
		{"unknown well-formed key", unknown.Plain, "invalid_api_key"},
		{"right prefix, wrong secret", changeSecret(org.APIKey), "invalid_api_key"},
		{"oversized", org.APIKey + strings.Repeat("x", 8000), "invalid_api_key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := me(tt.key)
			if m := r.Map(t); r.Status != http.StatusUnauthorized || m["code"] != tt.code || m["request_id"] == "" {
				t.Fatalf("= %d %v, want 401 %s", r.Status, m, tt.code)
			}
		})
	}
	if r := me(org.APIKey); r.Status != http.StatusOK {
		t.Fatalf("valid key = %d %s", r.Status, r.Body)
	}

	// Expiry with the controllable clock: a 1-day key works for the day.
	r, short := createKey(t, e, org.APIKey, map[string]any{"name": "one day", "scopes": []string{"usage.read"}, "expires_in_days": 1})
	if r.Status != http.StatusCreated || short.Status != "active" {
		t.Fatalf("create 1-day key = %d %s", r.Status, r.Body)
	}
	if got, want := short.ExpiresAt, short.CreatedAt.Add(24*time.Hour); !got.Equal(want) {
		t.Fatalf("expires_at = %s, want %s", got, want)
	}
	e.Clock.Advance(24*time.Hour - time.Minute)
	if r := me(*short.PlainTextKey); r.Status != http.StatusOK {
		t.Fatalf("1-day key before expiry = %d %s", r.Status, r.Body)
	}
	e.Clock.Advance(2 * time.Minute)
	if r := me(*short.PlainTextKey); r.Status != http.StatusUnauthorized || r.Map(t)["code"] != "api_key_expired" {
		t.Fatalf("1-day key after expiry = %d %s", r.Status, r.Body)
	}
	statusOf := func(id int64) string {
		for _, k := range listKeys(t, e, org.APIKey) {
			if k.ID == id {
				return k.Status
			}
		}
		t.Fatalf("key %d not listed", id)
		return ""
	}
	if s := statusOf(short.ID); s != "expired" {
		t.Fatalf("expired key status = %q", s)
	}

	// Revocation is immediate; repeating it is harmless; nothing revives it.
	victim := mustCreateKey(t, e, org.APIKey, "messages.read")
	if r := me(*victim.PlainTextKey); r.Status != http.StatusOK {
		t.Fatalf("victim before revoke = %d %s", r.Status, r.Body)
	}
	for range 2 {
		r := e.Do(Request{Method: http.MethodDelete, Path: tenantKeys + "/" + strconv.FormatInt(victim.ID, 10), Header: org.Key()})
		if r.Status != http.StatusNoContent || len(r.Body) != 0 {
			t.Fatalf("revoke = %d %q", r.Status, r.Body)
		}
	}
	if r := me(*victim.PlainTextKey); r.Status != http.StatusUnauthorized || r.Map(t)["code"] != "api_key_revoked" {
		t.Fatalf("revoked key = %d %s", r.Status, r.Body)
	}
	if s := statusOf(victim.ID); s != "revoked" {
		t.Fatalf("revoked key status = %q", s)
	}
	// A key may revoke itself; its next request is refused.
	self := mustCreateKey(t, e, org.APIKey, "*")
	if r := e.Do(Request{Method: http.MethodDelete, Path: tenantKeys + "/" + strconv.FormatInt(self.ID, 10), Header: KeyHeader(*self.PlainTextKey)}); r.Status != http.StatusNoContent {
		t.Fatalf("self revoke = %d %s", r.Status, r.Body)
	}
	if r := me(*self.PlainTextKey); r.Status != http.StatusUnauthorized {
		t.Fatalf("self-revoked key = %d %s", r.Status, r.Body)
	}
	// Unknown ids and ids that are not numbers are 404; so is a live key's
	// id written with a sign or a leading zero, which revokes nothing.
	live := strconv.FormatInt(org.APIKeyID, 10)
	for _, id := range []string{"999999", "abc", "0", "-1", "+" + live, "0" + live, "%20" + live} {
		if r := e.Do(Request{Method: http.MethodDelete, Path: tenantKeys + "/" + id, Header: org.Key()}); r.Status != http.StatusNotFound {
			t.Fatalf("revoke %s = %d %s", id, r.Status, r.Body)
		}
	}
	if r := me(org.APIKey); r.Status != http.StatusOK {
		t.Fatalf("the key whose id was written +%s / 0%s: %d %s", live, live, r.Status, r.Body)
	}
}

// docs/api.md, §API keys (Create): every invalid field of POST
// /api-keys is a 422 naming it, and nothing is created.
func TestTenantKeyCreateValidation(t *testing.T) {
	t.Parallel()
	e := Start(t, Options{})
	org := e.Register(t)
	before := len(listKeys(t, e, org.APIKey))
	tests := []struct {
		name   string
		body   string
		fields []string
	}{
		{"name missing", `{"scopes":["*"]}`, []string{"name"}},
		{"name null", `{"name":null,"scopes":["*"]}`, []string{"name"}},
		{"name blank", `{"name":"   ","scopes":["*"]}`, []string{"name"}},
		{"name not a string", `{"name":7,"scopes":["*"]}`, []string{"name"}},
		{"name too long", `{"name":"` + strings.Repeat("n", 101) + `","scopes":["*"]}`, []string{"name"}},
		{"scopes missing", `{"name":"k"}`, []string{"scopes"}},
		{"scopes empty", `{"name":"k","scopes":[]}`, []string{"scopes"}},
		{"scopes not an array", `{"name":"k","scopes":"*"}`, []string{"scopes"}},
		{"scope not a string", `{"name":"k","scopes":[1]}`, []string{"scopes"}},
		{"unknown scope", `{"name":"k","scopes":["messages.send","admin"]}`, []string{"scopes"}},
		{"expires_in_days 0", `{"name":"k","scopes":["*"],"expires_in_days":0}`, []string{"expires_in_days"}},
		{"expires_in_days 366", `{"name":"k","scopes":["*"],"expires_in_days":366}`, []string{"expires_in_days"}},
		{"expires_in_days negative", `{"name":"k","scopes":["*"],"expires_in_days":-5}`, []string{"expires_in_days"}},
		{"expires_in_days fraction", `{"name":"k","scopes":["*"],"expires_in_days":1.5}`, []string{"expires_in_days"}},
		{"expires_in_days 30.0", `{"name":"k","scopes":["*"],"expires_in_days":30.0}`, []string{"expires_in_days"}},
		{"expires_in_days exponent", `{"name":"k","scopes":["*"],"expires_in_days":3e1}`, []string{"expires_in_days"}},
		{"expires_in_days string", `{"name":"k","scopes":["*"],"expires_in_days":"30"}`, []string{"expires_in_days"}},
		{"expires_in_days boolean", `{"name":"k","scopes":["*"],"expires_in_days":true}`, []string{"expires_in_days"}},
		{"expires_in_days huge", `{"name":"k","scopes":["*"],"expires_in_days":99999999999999999999}`, []string{"expires_in_days"}},
		{"everything wrong", `{"name":"","scopes":["x"],"expires_in_days":400}`, []string{"name", "scopes", "expires_in_days"}},
		{"empty object", `{}`, []string{"name", "scopes"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := e.Do(Request{Method: http.MethodPost, Path: tenantKeys, Header: org.Key(), Body: tt.body})
			m := r.Map(t)
			errs, _ := m["errors"].(map[string]any)
			if r.Status != http.StatusUnprocessableEntity || m["code"] != "validation_failed" || len(errs) != len(tt.fields) {
				t.Fatalf("= %d %v, want 422 on %v", r.Status, m, tt.fields)
			}
			for _, f := range tt.fields {
				if msgs, _ := errs[f].([]any); len(msgs) == 0 {
					t.Errorf("no error for %s: %v", f, errs)
				}
			}
		})
	}
	// Malformed bodies: 400 and 415, not 422.
	if r := e.Do(Request{Method: http.MethodPost, Path: tenantKeys, Header: org.Key(), Body: `{"name":`}); r.Status != http.StatusBadRequest {
		t.Fatalf("malformed JSON = %d %s", r.Status, r.Body)
	}
	r := e.Do(Request{Method: http.MethodPost, Path: tenantKeys, Header: map[string]string{"X-Api-Key": org.APIKey, "Content-Type": "text/plain"}, Body: `name=k`})
	if r.Status != http.StatusUnsupportedMediaType {
		t.Fatalf("text/plain = %d %s", r.Status, r.Body)
	}
	if after := len(listKeys(t, e, org.APIKey)); after != before {
		t.Fatalf("invalid requests created keys: %d → %d", before, after)
	}

	// Boundaries, the default, normalisation, ignored fields.
	for _, tt := range []struct {
		body       map[string]any
		days       int
		wantScopes []string
	}{
		{map[string]any{"name": "min", "scopes": []string{"usage.read"}, "expires_in_days": 1}, 1, []string{"usage.read"}},
		{map[string]any{"name": "max", "scopes": []string{"usage.read"}, "expires_in_days": 365}, 365, []string{"usage.read"}},
		{map[string]any{"name": "default", "scopes": []string{"messages.send", "messages.read", "messages.send"}}, 90, []string{"messages.read", "messages.send"}},
		{map[string]any{"name": "null days", "scopes": []string{"*", "usage.read"}, "expires_in_days": nil}, 90, []string{"*"}},
		{map[string]any{"name": "extras", "scopes": []string{"contacts.lookup"}, "status": "revoked", "id": 1, "prefix": "bmk_mine", "plain_text_key": "x"}, 90, []string{"contacts.lookup"}},
	} {
		r, k := createKey(t, e, org.APIKey, tt.body)
		if r.Status != http.StatusCreated || k.Status != "active" || !slices.Equal(k.Scopes, tt.wantScopes) ||
			!k.ExpiresAt.Equal(k.CreatedAt.Add(time.Duration(tt.days)*24*time.Hour)) || k.Name != tt.body["name"] ||
			k.PlainTextKey == nil || !strings.HasPrefix(*k.PlainTextKey, k.Prefix) || len(k.Prefix) != apikey.PrefixLength || k.LastUsedAt != nil {
			t.Fatalf("create %v = %d %s", tt.body, r.Status, r.Body)
		}
	}
}

// scopeProbe mounts one test route per scope behind tenant.RequireScope,
// and one behind RequireAnyScope, on the authenticated Tenant API group.
func scopeProbe(a *app.App) {
	ok := func(c *gin.Context) { c.JSON(http.StatusOK, gin.H{"ok": true}) }
	for _, s := range apikey.Scopes() {
		if s != apikey.ScopeAll {
			a.TenantRoutes.GET("/test/scope/"+s, tenant.RequireScope(s), ok)
		}
	}
	a.TenantRoutes.GET("/test/any", tenant.RequireAnyScope(apikey.ScopeMessagesSend, apikey.ScopeMessagesRead), ok)
}

// docs/api.md, §Tenant API endpoints and scopes: a key lacking the scope of
// an operation gets 403 naming the scope; "*" covers all. And the subset
// rules for creating and revoking keys.
func TestTenantScopes(t *testing.T) {
	t.Parallel()
	e := Start(t, Options{Setup: scopeProbe})
	org := e.Register(t)
	scopes := []string{"messages.send", "messages.read", "contacts.lookup", "usage.read"}
	keyFor := map[string]string{"*": org.APIKey}
	for _, s := range scopes {
		keyFor[s] = *mustCreateKey(t, e, org.APIKey, s).PlainTextKey
	}
	for holder, key := range keyFor {
		for _, need := range scopes {
			t.Run(holder+" on "+need, func(t *testing.T) {
				r := e.Do(Request{Method: http.MethodGet, Path: "/api/v1/test/scope/" + need, Header: KeyHeader(key)})
				if holder == "*" || holder == need {
					if r.Status != http.StatusOK {
						t.Fatalf("= %d %s, want 200", r.Status, r.Body)
					}
					return
				}
				m := r.Map(t)
				if r.Status != http.StatusForbidden || m["code"] != "insufficient_scope" || !strings.Contains(m["message"].(string), need) ||
					!slices.Equal(m["required_scopes"].([]any), []any{need}) {
					t.Fatalf("= %d %v, want 403 naming %s", r.Status, m, need)
				}
			})
		}
		r := e.Do(Request{Method: http.MethodGet, Path: "/api/v1/test/any", Header: KeyHeader(key)})
		want := http.StatusForbidden
		if holder == "*" || holder == "messages.send" || holder == "messages.read" {
			want = http.StatusOK
		}
		if r.Status != want {
			t.Fatalf("%s on any-of route = %d %s", holder, r.Status, r.Body)
		}
	}

	// Creating: requested scopes ⊆ the caller's ("*" covers all).
	sendKey := keyFor["messages.send"]
	for _, tt := range []struct {
		scopes  []string
		want    int
		missing []any
	}{
		{[]string{"messages.send"}, http.StatusCreated, nil},
		{[]string{"messages.read"}, http.StatusForbidden, []any{"messages.read"}},
		{[]string{"messages.send", "usage.read", "contacts.lookup"}, http.StatusForbidden, []any{"contacts.lookup", "usage.read"}},
		{[]string{"*"}, http.StatusForbidden, []any{"*"}},
	} {
		r, _ := createKey(t, e, sendKey, map[string]any{"name": "sub", "scopes": tt.scopes})
		if r.Status != tt.want {
			t.Fatalf("messages.send key creates %v = %d %s", tt.scopes, r.Status, r.Body)
		}
		if tt.want == http.StatusForbidden {
			if m := r.Map(t); m["code"] != "insufficient_scope" || !slices.Equal(m["missing_scopes"].([]any), tt.missing) {
				t.Fatalf("messages.send key creates %v: %v", tt.scopes, m)
			}
		}
	}
	for _, s := range append([]string{"*"}, scopes...) {
		if r, _ := createKey(t, e, org.APIKey, map[string]any{"name": "any", "scopes": []string{s}}); r.Status != http.StatusCreated {
			t.Fatalf("* key creates %s = %d %s", s, r.Status, r.Body)
		}
	}

	// Revoking: the caller's scopes ⊇ the target's.
	broader := mustCreateKey(t, e, org.APIKey, "messages.send", "messages.read")
	same := mustCreateKey(t, e, org.APIKey, "messages.send")
	all := mustCreateKey(t, e, org.APIKey, "*")
	revoke := func(with string, id int64) *Response {
		return e.Do(Request{Method: http.MethodDelete, Path: tenantKeys + "/" + strconv.FormatInt(id, 10), Header: KeyHeader(with)})
	}
	if r := revoke(sendKey, broader.ID); r.Status != http.StatusForbidden || r.Map(t)["code"] != "insufficient_scope" {
		t.Fatalf("send key revokes send+read key = %d %s", r.Status, r.Body)
	}
	if r := revoke(sendKey, all.ID); r.Status != http.StatusForbidden {
		t.Fatalf("send key revokes * key = %d %s", r.Status, r.Body)
	}
	if r := revoke(sendKey, same.ID); r.Status != http.StatusNoContent {
		t.Fatalf("send key revokes send key = %d %s", r.Status, r.Body)
	}
	if r := revoke(*all.PlainTextKey, broader.ID); r.Status != http.StatusNoContent {
		t.Fatalf("* key revokes send+read key = %d %s", r.Status, r.Body)
	}
	// A refused revocation changed nothing.
	if r := e.Do(Request{Method: http.MethodGet, Path: tenantMe, Header: KeyHeader(*all.PlainTextKey)}); r.Status != http.StatusOK {
		t.Fatalf("* key after refused revoke = %d %s", r.Status, r.Body)
	}
}

// docs/api.md, §API keys (Resource): the full key is shown only in the
// creation response, never in lists or /me, on either API.
func TestPlainTextKeyOnlyOnCreation(t *testing.T) {
	t.Parallel()
	e := Start(t, Options{})
	org := e.Register(t)
	r, k := createKey(t, e, org.APIKey, map[string]any{"name": "shown once", "scopes": []string{"messages.read"}})
	if r.Status != http.StatusCreated || k.PlainTextKey == nil || r.Header.Get("Cache-Control") != "no-store" {
		t.Fatalf("create = %d %s", r.Status, r.Body)
	}
	plain := *k.PlainTextKey
	for _, req := range []Request{
		{Method: http.MethodGet, Path: tenantKeys, Header: org.Key()},
		{Method: http.MethodGet, Path: tenantKeys, Header: KeyHeader(plain)},
		{Method: http.MethodGet, Path: tenantMe, Header: KeyHeader(plain)},
		{Method: http.MethodGet, Path: centralPath + "/api-keys", Header: org.Bearer()},
		{Method: http.MethodGet, Path: centralPath + "/me", Header: org.Bearer()},
	} {
		r := e.Do(req)
		if r.Status != http.StatusOK {
			t.Fatalf("%s %s = %d %s", req.Method, req.Path, r.Status, r.Body)
		}
		if strings.Contains(string(r.Body), "plain_text_key") || strings.Contains(string(r.Body), plain[apikey.PrefixLength:]) {
			t.Fatalf("%s %s shows the key: %s", req.Method, req.Path, r.Body)
		}
	}
	// The listing holds the key with its metadata.
	var found bool
	for _, l := range listKeys(t, e, org.APIKey) {
		if l.ID == k.ID {
			found = l.Prefix == k.Prefix && l.Name == "shown once" && l.Status == "active" && slices.Equal(l.Scopes, []string{"messages.read"})
		}
	}
	if !found {
		t.Fatal("created key not listed with its metadata")
	}
}

// GET /me: {"data": {user, api_key, organization, subscription}}; user is
// the key's creator, inherited by keys created through the Tenant API.
func TestTenantMe(t *testing.T) {
	t.Parallel()
	e := Start(t, Options{})
	org := e.Register(t)
	child := mustCreateKey(t, e, org.APIKey, "usage.read")
	for _, key := range []string{org.APIKey, *child.PlainTextKey} {
		r := e.Do(Request{Method: http.MethodGet, Path: tenantMe, Header: KeyHeader(key)})
		var body struct {
			Data struct {
				User *struct {
					ID    int64  `json:"id"`
					Email string `json:"email"`
					Role  string `json:"role"`
				} `json:"user"`
				APIKey       keyResource `json:"api_key"`
				Organization struct {
					ID                 int64  `json:"id"`
					Name               string `json:"name"`
					SubscriptionStatus string `json:"subscription_status"`
					DefaultDailyLimit  int    `json:"default_daily_limit"`
				} `json:"organization"`
				Subscription struct {
					Status string `json:"status"`
				} `json:"subscription"`
			} `json:"data"`
		}
		r.JSON(t, &body)
		d := body.Data
		if r.Status != http.StatusOK || d.User == nil || d.User.ID != org.OwnerID || d.User.Email != org.OwnerEmail || d.User.Role != "owner" ||
			d.APIKey.Prefix != key[:apikey.PrefixLength] || d.APIKey.Status != "active" || d.APIKey.PlainTextKey != nil ||
			d.Organization.ID != org.ID || d.Organization.Name != org.Name || d.Organization.SubscriptionStatus != "trialing" ||
			d.Organization.DefaultDailyLimit != 1000 || d.Subscription.Status != "trialing" {
			t.Fatalf("me = %d %s", r.Status, r.Body)
		}
	}
}

// A key with a wrong checksum is refused without touching the database:
// with the database unreachable it still gets 401, while a well-formed key
// (which needs the database) gets 503.
func TestMalformedKeyNeedsNoDatabase(t *testing.T) {
	t.Parallel()
	e := Start(t, Options{})
	org := e.Register(t)
	u, err := url.Parse(e.DatabaseURL)
	if err != nil {
		t.Fatal(err)
	}
	name := strings.TrimPrefix(u.Path, "/")
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, dbtest.ServerURL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	allow := func(on bool) {
		t.Helper()
		if _, err := admin.Exec(ctx, fmt.Sprintf("ALTER DATABASE %s ALLOW_CONNECTIONS %t", pgx.Identifier{name}.Sanitize(), on)); err != nil {
			t.Fatal(err)
		}
		if !on {
			if _, err := admin.Exec(ctx, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()", name); err != nil {
				t.Fatal(err)
			}
		}
	}
	allow(false)
	defer allow(true)
	// What shows that a malformed key is refused without the database is
	// the answer itself: a request that needed the database gets 503 here,
	// as the well-formed key below does, not how fast it came.
	for _, bad := range []string{wrongChecksum(org.APIKey), "bmk_short", org.APIKey[:30]} {
		r := e.Do(Request{Method: http.MethodGet, Path: tenantMe, Header: KeyHeader(bad)})
		if r.Status != http.StatusUnauthorized || r.Map(t)["code"] != "invalid_api_key" {
			t.Fatalf("malformed key with the database down = %d %s", r.Status, r.Body)
		}
	}
	if r := e.Do(Request{Method: http.MethodGet, Path: tenantMe, Header: org.Key()}); r.Status != http.StatusServiceUnavailable {
		t.Fatalf("well-formed key with the database down = %d %s (want 503: it needs the database)", r.Status, r.Body)
	}
}

// The database holds no plain key: every table of every schema is scanned
// for the secret part of keys made both ways, with and without encrypted
// storage.
func TestDatabaseHoldsNoPlainKey(t *testing.T) {
	t.Parallel()
	for _, encrypted := range []bool{false, true} {
		t.Run("encrypted="+strconv.FormatBool(encrypted), func(t *testing.T) {
			t.Parallel()
			env := map[string]string{}
			if encrypted {
				env["API_KEY_ENCRYPTION_KEY"] = strings.Repeat("ab", 32)
			}
			e := Start(t, Options{Env: env})
			org := e.Register(t)
			plains := []string{org.APIKey, *mustCreateKey(t, e, org.APIKey, "messages.send").PlainTextKey}
			// Use them, so last_used_at and any other write paths have run.
			for _, p := range plains {
				if r := e.Do(Request{Method: http.MethodGet, Path: tenantMe, Header: KeyHeader(p)}); r.Status != http.StatusOK {
					t.Fatalf("me = %d %s", r.Status, r.Body)
				}
			}
			ctx := context.Background()
			rows, err := e.App.DB.Pool.Query(ctx, `SELECT table_schema, table_name FROM information_schema.tables
				WHERE table_type = 'BASE TABLE' AND table_schema NOT IN ('pg_catalog', 'information_schema')`)
			if err != nil {
				t.Fatal(err)
			}
			tables, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (pgx.Identifier, error) {
				var s, n string
				err := r.Scan(&s, &n)
				return pgx.Identifier{s, n}, err
			})
			if err != nil || len(tables) < 5 {
				t.Fatalf("tables = %v, %v", tables, err)
			}
			for _, p := range plains {
				secret := p[apikey.PrefixLength:]
				for _, tbl := range tables {
					var n int
					// As text, and as the hex of its bytes (a bytea column).
					if err := e.App.DB.Pool.QueryRow(ctx, `SELECT count(*) FROM `+tbl.Sanitize()+` t
						WHERE strpos(t::text, $1) > 0 OR strpos(t::text, encode(convert_to($1, 'UTF8'), 'hex')) > 0`, secret).Scan(&n); err != nil {
						t.Fatalf("scan %s: %v", tbl.Sanitize(), err)
					}
					if n > 0 {
						t.Fatalf("table %s holds a plain API key", tbl.Sanitize())
					}
				}
			}
			var sealed int
			if err := e.App.DB.Pool.QueryRow(ctx, `SELECT count(*) FROM central.api_keys WHERE key_sealed IS NOT NULL`).Scan(&sealed); err != nil {
				t.Fatal(err)
			}
			if want := map[bool]int{false: 0, true: len(plains)}[encrypted]; sealed != want {
				t.Fatalf("sealed copies = %d, want %d", sealed, want)
			}
		})
	}
}

// 1,000 requests with one key write last_used_at once per window, however
// concurrent; the next window writes once more.
func TestLastUsedAtWrittenOncePerWindow(t *testing.T) {
	t.Parallel()
	e := Start(t, Options{})
	org := e.Register(t)
	k := mustCreateKey(t, e, org.APIKey, "usage.read")
	ctx := context.Background()
	row := func() (xmin string, lastUsed *time.Time) {
		t.Helper()
		if err := e.App.DB.Pool.QueryRow(ctx, `SELECT xmin::text, last_used_at FROM central.api_keys WHERE id = $1`, k.ID).Scan(&xmin, &lastUsed); err != nil {
			t.Fatal(err)
		}
		return xmin, lastUsed
	}
	xmin0, used := row()
	if used != nil || k.LastUsedAt != nil {
		t.Fatalf("last_used_at before first use = %v", used)
	}
	writes0 := e.App.Keys.LastUsedWrites()

	const total, workers = 1000, 8
	var (
		wg     sync.WaitGroup
		failed sync.Map
	)
	next := make(chan int)
	for range workers {
		wg.Go(func() {
			for range next {
				r, err := e.Send(Request{Method: http.MethodGet, Path: tenantMe, Header: KeyHeader(*k.PlainTextKey)})
				if err != nil || r.Status != http.StatusOK {
					failed.Store(fmt.Sprint(err, r), true)
				}
			}
		})
	}
	for i := range total {
		next <- i
	}
	close(next)
	wg.Wait()
	failed.Range(func(k, _ any) bool { t.Fatalf("request failed: %v", k); return false })

	if got := e.App.Keys.LastUsedWrites() - writes0; got != 1 {
		t.Fatalf("%d requests wrote last_used_at %d times, want 1", total, got)
	}
	xmin1, used := row()
	if used == nil || used.Sub(e.Clock.Now()).Abs() > time.Millisecond || xmin1 == xmin0 {
		t.Fatalf("after first window: last_used_at %v (clock %s), xmin %s → %s", used, e.Clock.Now(), xmin0, xmin1)
	}
	// Within the window, more requests leave the row version untouched.
	e.Clock.Advance(59 * time.Second)
	for range 20 {
		if r := e.Do(Request{Method: http.MethodGet, Path: tenantMe, Header: KeyHeader(*k.PlainTextKey)}); r.Status != http.StatusOK {
			t.Fatalf("me = %d", r.Status)
		}
	}
	if xmin, _ := row(); xmin != xmin1 || e.App.Keys.LastUsedWrites()-writes0 != 1 {
		t.Fatalf("a write happened within the window (xmin %s → %s)", xmin1, xmin)
	}
	// The next window writes once more, and /me shows the new time.
	e.Clock.Advance(2 * time.Second)
	r := e.Do(Request{Method: http.MethodGet, Path: tenantMe, Header: KeyHeader(*k.PlainTextKey)})
	var body struct {
		Data struct {
			APIKey keyResource `json:"api_key"`
		} `json:"data"`
	}
	r.JSON(t, &body)
	if got := e.App.Keys.LastUsedWrites() - writes0; got != 2 || body.Data.APIKey.LastUsedAt == nil ||
		!body.Data.APIKey.LastUsedAt.Equal(e.Clock.Now().Truncate(time.Second)) {
		t.Fatalf("next window: %d writes, last_used_at %v (clock %s)", got, body.Data.APIKey.LastUsedAt, e.Clock.Now())
	}
}

// Every scoped route of the Tenant API (docs/api.md, §Tenant API endpoints
// and scopes): a key without the scope gets 403 naming it before the handler
// runs; a key with it (or "*") gets past the check.
func TestContractRouteScopes(t *testing.T) {
	t.Parallel()
	e := Start(t, Options{})
	org := e.Register(t)
	all := []string{"messages.send", "messages.read", "contacts.lookup", "usage.read"}
	keyFor := map[string]string{"*": org.APIKey}
	for _, s := range all {
		keyFor[s] = e.APIKey(t, org, s)
	}
	routes := []struct {
		method, path string
		body         any
		anyOf        []string
	}{
		{http.MethodPost, "/api/v1/sender-numbers", map[string]any{}, []string{"messages.send"}},
		{http.MethodGet, "/api/v1/sender-numbers", nil, []string{"messages.send", "messages.read"}},
		{http.MethodPost, "/api/v1/messages", map[string]any{}, []string{"messages.send"}},
		{http.MethodGet, "/api/v1/messages", nil, []string{"messages.read"}},
		{http.MethodGet, "/api/v1/messages/1", nil, []string{"messages.read"}},
		{http.MethodGet, "/api/v1/contacts/lookup?phone=%2B14155550100", nil, []string{"contacts.lookup"}},
		{http.MethodGet, "/api/v1/usage", nil, []string{"usage.read"}},
	}
	for _, rt := range routes {
		for holder, key := range keyFor {
			t.Run(rt.method+" "+rt.path+" with "+holder, func(t *testing.T) {
				r := e.Do(Request{Method: rt.method, Path: rt.path, Header: KeyHeader(key), Body: rt.body})
				if holder == "*" || slices.Contains(rt.anyOf, holder) {
					if r.Status == http.StatusUnauthorized || r.Status == http.StatusForbidden || r.Status == http.StatusNotFound && strings.Contains(string(r.Body), "endpoint does not exist") {
						t.Fatalf("= %d %s, want past the scope check", r.Status, r.Body)
					}
					return
				}
				m := r.Map(t)
				if r.Status != http.StatusForbidden || m["code"] != "insufficient_scope" {
					t.Fatalf("= %d %v, want 403 insufficient_scope", r.Status, m)
				}
				for _, s := range rt.anyOf {
					if !strings.Contains(m["message"].(string), s) {
						t.Fatalf("message %q does not name %s", m["message"], s)
					}
				}
			})
		}
	}
}
