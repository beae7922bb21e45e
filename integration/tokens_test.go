package integration

import (
	"crypto/rand"
	"crypto/rsa"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/bizmsg/platform/central"
	"github.com/bizmsg/platform/platform/accounts"
	"github.com/bizmsg/platform/platform/token"
)

// jwtSecret is the JWT_SECRET the harness configures.
var jwtSecret = []byte(strings.Repeat("j", 32))

// previousSecret is a JWT_PREVIOUS_SECRET for the rotation test.
const previousSecret = "previous-secret-previous-secret-previous"

// forge builds an access token by hand: claims are edited by mutate, the
// token is signed with method and key, and kid is written unless empty.
func forge(t *testing.T, org *Org, now time.Time, method jwt.SigningMethod, key any, kid string, mutate func(jwt.MapClaims)) string {
	t.Helper()
	claims := jwt.MapClaims{
		"iss": token.DefaultIssuer, "aud": []string{token.DefaultAudience},
		"sub": strconv.FormatInt(org.OwnerID, 10), "org": org.ID, "role": "owner", "jti": rand.Text(),
		"iat": now.Unix(), "nbf": now.Unix(), "exp": now.Add(10 * time.Minute).Unix(),
	}
	if mutate != nil {
		mutate(claims)
	}
	tok := jwt.NewWithClaims(method, claims)
	if kid != "" {
		tok.Header["kid"] = kid
	}
	s, err := tok.SignedString(key)
	if err != nil {
		t.Fatalf("sign: %v", err)
	}
	return s
}

func TestAccessTokens(t *testing.T) {
	t.Parallel()
	e := Start(t, Options{Env: map[string]string{"JWT_PREVIOUS_SECRET": previousSecret}})
	org := e.Register(t)
	now := e.Clock.Now()
	kid := accounts.KeyID(jwtSecret)
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	none := forge(t, org, now, jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType, kid, nil)
	valid := forge(t, org, now, jwt.SigningMethodHS256, jwtSecret, kid, nil)
	parts := strings.Split(valid, ".")
	flip := func(s string) string {
		b := []byte(s)
		b[len(b)/2] ^= 0x01
		return string(b)
	}
	otherPayload := strings.Split(forge(t, org, now, jwt.SigningMethodHS256, jwtSecret, kid, func(c jwt.MapClaims) { c["role"] = "admin" }), ".")[1]

	tests := []struct {
		name   string
		header string
		want   int
	}{
		{"issued by login", "Bearer " + org.AccessToken, http.StatusOK},
		{"forged with the real secret", "Bearer " + valid, http.StatusOK},
		{"scheme is case-insensitive", "bearer " + valid, http.StatusOK},
		{"previous secret with its kid", "Bearer " + forge(t, org, now, jwt.SigningMethodHS256, []byte(previousSecret), accounts.KeyID([]byte(previousSecret)), nil), http.StatusOK},
		{"previous secret under the current kid", "Bearer " + forge(t, org, now, jwt.SigningMethodHS256, []byte(previousSecret), kid, nil), http.StatusUnauthorized},
		{"missing exp", "Bearer " + forge(t, org, now, jwt.SigningMethodHS256, jwtSecret, kid, func(c jwt.MapClaims) { delete(c, "exp") }), http.StatusUnauthorized},
		{"expired", "Bearer " + forge(t, org, now.Add(-time.Hour), jwt.SigningMethodHS256, jwtSecret, kid, nil), http.StatusUnauthorized},
		{"alg none", "Bearer " + none, http.StatusUnauthorized},
		{"signature stripped", "Bearer " + parts[0] + "." + parts[1] + ".", http.StatusUnauthorized},
		{"alg HS512", "Bearer " + forge(t, org, now, jwt.SigningMethodHS512, jwtSecret, kid, nil), http.StatusUnauthorized},
		{"alg RS256", "Bearer " + forge(t, org, now, jwt.SigningMethodRS256, rsaKey, kid, nil), http.StatusUnauthorized},
		{"wrong audience", "Bearer " + forge(t, org, now, jwt.SigningMethodHS256, jwtSecret, kid, func(c jwt.MapClaims) { c["aud"] = []string{"someone-else"} }), http.StatusUnauthorized},
		{"no audience", "Bearer " + forge(t, org, now, jwt.SigningMethodHS256, jwtSecret, kid, func(c jwt.MapClaims) { delete(c, "aud") }), http.StatusUnauthorized},
		{"wrong issuer", "Bearer " + forge(t, org, now, jwt.SigningMethodHS256, jwtSecret, kid, func(c jwt.MapClaims) { c["iss"] = "evil" }), http.StatusUnauthorized},
		{"unknown kid", "Bearer " + forge(t, org, now, jwt.SigningMethodHS256, jwtSecret, "k-unknown", nil), http.StatusUnauthorized},
		{"no kid", "Bearer " + forge(t, org, now, jwt.SigningMethodHS256, jwtSecret, "", nil), http.StatusUnauthorized},
		{"other secret", "Bearer " + forge(t, org, now, jwt.SigningMethodHS256, []byte(strings.Repeat("x", 32)), kid, nil), http.StatusUnauthorized},
		{"tampered signature", "Bearer " + parts[0] + "." + parts[1] + "." + flip(parts[2]), http.StatusUnauthorized},
		{"tampered payload", "Bearer " + parts[0] + "." + otherPayload + "." + parts[2], http.StatusUnauthorized},
		{"not yet valid", "Bearer " + forge(t, org, now.Add(time.Hour), jwt.SigningMethodHS256, jwtSecret, kid, nil), http.StatusUnauthorized},
		{"other organization claimed", "Bearer " + forge(t, org, now, jwt.SigningMethodHS256, jwtSecret, kid, func(c jwt.MapClaims) { c["org"] = org.ID + 1000 }), http.StatusUnauthorized},
		{"garbage", "Bearer not.a.jwt", http.StatusUnauthorized},
		{"basic scheme", "Basic dXNlcjpwYXNz", http.StatusUnauthorized},
		{"empty bearer", "Bearer ", http.StatusUnauthorized},
		{"oversized header", "Bearer " + valid + strings.Repeat("a", central.MaxAuthorizationBytes), http.StatusUnauthorized},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := e.Do(Request{Method: http.MethodGet, Path: centralPath + "/me", Header: map[string]string{"Authorization": tt.header}})
			if r.Status != tt.want {
				t.Fatalf("= %d %s, want %d", r.Status, r.Body, tt.want)
			}
			if tt.want == http.StatusUnauthorized {
				if m := r.Map(t); m["code"] != "invalid_token" || r.Header.Get("WWW-Authenticate") == "" {
					t.Fatalf("401 body %v, WWW-Authenticate %q", m, r.Header.Get("WWW-Authenticate"))
				}
			}
		})
	}

	// The wrong credential on each API.
	r := e.Do(Request{Method: http.MethodGet, Path: centralPath + "/me", Header: org.Key()})
	if m := r.Map(t); r.Status != http.StatusUnauthorized || m["code"] != "missing_token" || !strings.Contains(m["message"].(string), "API keys are not accepted") {
		t.Fatalf("central with X-Api-Key = %d %v", r.Status, m)
	}
	r = e.Do(Request{Method: http.MethodGet, Path: "/api/v1/me", Header: org.Bearer()})
	if m := r.Map(t); r.Status != http.StatusUnauthorized || m["code"] != "missing_api_key" || !strings.Contains(m["message"].(string), "bearer tokens are not accepted") {
		t.Fatalf("tenant with bearer = %d %v", r.Status, m)
	}

	// A token issued now works for its 15 minutes, then expires.
	e.Clock.Advance(14 * time.Minute)
	if r := e.Do(Request{Method: http.MethodGet, Path: centralPath + "/me", Header: org.Bearer()}); r.Status != http.StatusOK {
		t.Fatalf("token at 14 min = %d %s", r.Status, r.Body)
	}
	e.Clock.Advance(2 * time.Minute)
	if r := e.Do(Request{Method: http.MethodGet, Path: centralPath + "/me", Header: org.Bearer()}); r.Status != http.StatusUnauthorized {
		t.Fatalf("token at 16 min = %d %s", r.Status, r.Body)
	}
}

// refresh posts a refresh token and returns the response.
func refresh(e *Env, tok string) *Response {
	return e.Do(Request{Method: http.MethodPost, Path: centralPath + "/token/refresh", Body: map[string]any{"refresh_token": tok}})
}

func TestRefreshRotationAndLogout(t *testing.T) {
	t.Parallel()
	e := Start(t, Options{})
	org := e.Register(t)

	// Rotation: r0 → r1 → r2; each answer has a fresh access token.
	chain := []string{org.RefreshToken}
	for range 2 {
		r := refresh(e, chain[len(chain)-1])
		m := r.Map(t)
		if r.Status != http.StatusOK || m["token_type"] != "Bearer" || m["refresh_token"] == "" || m["access_token"] == "" {
			t.Fatalf("refresh = %d %v", r.Status, m)
		}
		if r := e.Do(Request{Method: http.MethodGet, Path: centralPath + "/me", Header: Bearer(m["access_token"].(string))}); r.Status != http.StatusOK {
			t.Fatalf("me with refreshed token = %d %s", r.Status, r.Body)
		}
		chain = append(chain, m["refresh_token"].(string))
	}
	// Reusing r0 (already rotated) revokes the family: r2, the newest, dies too.
	r := refresh(e, chain[0])
	if m := r.Map(t); r.Status != http.StatusUnauthorized || m["code"] != "invalid_refresh_token" {
		t.Fatalf("reuse = %d %v", r.Status, m)
	}
	if r := refresh(e, chain[2]); r.Status != http.StatusUnauthorized {
		t.Fatalf("newest token after reuse = %d %s", r.Status, r.Body)
	}

	// Other sessions (families) are unaffected; logout ends one family.
	login := func() string {
		r := e.Do(Request{Method: http.MethodPost, Path: centralPath + "/login", Body: map[string]any{"email": org.OwnerEmail, "password": org.OwnerPassword}})
		if r.Status != http.StatusOK {
			t.Fatalf("login = %d %s", r.Status, r.Body)
		}
		return r.Map(t)["refresh_token"].(string)
	}
	a, b := login(), login()
	if r := e.Do(Request{Method: http.MethodPost, Path: centralPath + "/logout", Header: org.Bearer(), Body: map[string]any{"refresh_token": a}}); r.Status != http.StatusNoContent {
		t.Fatalf("logout = %d %s", r.Status, r.Body)
	}
	if r := refresh(e, a); r.Status != http.StatusUnauthorized {
		t.Fatalf("refresh after logout = %d %s", r.Status, r.Body)
	}
	r = refresh(e, b)
	if r.Status != http.StatusOK {
		t.Fatalf("other session after logout = %d %s", r.Status, r.Body)
	}
	b = r.Map(t)["refresh_token"].(string)
	// Logout without a body ends every session of the user.
	if r := e.Do(Request{Method: http.MethodPost, Path: centralPath + "/logout", Header: org.Bearer()}); r.Status != http.StatusNoContent {
		t.Fatalf("logout everywhere = %d %s", r.Status, r.Body)
	}
	if r := refresh(e, b); r.Status != http.StatusUnauthorized {
		t.Fatalf("refresh after logout everywhere = %d %s", r.Status, r.Body)
	}
	if r := e.Do(Request{Method: http.MethodPost, Path: centralPath + "/logout", Body: map[string]any{}}); r.Status != http.StatusUnauthorized {
		t.Fatalf("logout without a bearer = %d %s", r.Status, r.Body)
	}

	// Malformed, missing and expired refresh tokens.
	if r := refresh(e, "bmr_garbage"); r.Status != http.StatusUnauthorized {
		t.Fatalf("garbage refresh = %d %s", r.Status, r.Body)
	}
	if r := e.Do(Request{Method: http.MethodPost, Path: centralPath + "/token/refresh", Body: map[string]any{}}); r.Status != http.StatusUnprocessableEntity {
		t.Fatalf("missing refresh token = %d %s", r.Status, r.Body)
	}
	c := login()
	e.Clock.Advance(accounts.DefaultRefreshTTL + time.Second)
	if r := refresh(e, c); r.Status != http.StatusUnauthorized {
		t.Fatalf("expired refresh token = %d %s", r.Status, r.Body)
	}
}
