package token

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/bizmsg/platform/platform/clock"
)

var (
	start     = time.Date(2026, 11, 22, 14, 3, 5, 0, time.UTC)
	keyOne    = Key{ID: "k1", Secret: bytes.Repeat([]byte{1}, MinSecretLength)}
	keyTwo    = Key{ID: "k2", Secret: bytes.Repeat([]byte{2}, MinSecretLength)}
	keyStolen = Key{ID: "k1", Secret: bytes.Repeat([]byte{9}, MinSecretLength)}
)

// fixture is one Issuer with its own fake clock, so parallel tests can move
// time independently.
type fixture struct {
	clk *clock.Fake
	iss *Issuer
}

func newFixture(t *testing.T, mutate func(*Config)) *fixture {
	t.Helper()
	clk := clock.NewFake(start)
	cfg := Config{Keys: []Key{keyOne}, Clock: clk}
	if mutate != nil {
		mutate(&cfg)
	}
	iss, err := NewIssuer(cfg)
	if err != nil {
		t.Fatalf("NewIssuer: %v", err)
	}
	return &fixture{clk: clk, iss: iss}
}

func (f *fixture) issue(t *testing.T) string {
	t.Helper()
	tok, _, err := f.iss.Issue(42, 7, "admin")
	if err != nil {
		t.Fatalf("Issue: %v", err)
	}
	return tok
}

// validClaims are claims the fixture's Issuer would accept at start.
func validClaims() jwt.MapClaims {
	return jwt.MapClaims{
		"iss":  DefaultIssuer,
		"aud":  DefaultAudience,
		"sub":  "42",
		"exp":  start.Add(10 * time.Minute).Unix(),
		"iat":  start.Unix(),
		"nbf":  start.Unix(),
		"jti":  "jti-1",
		"org":  7,
		"role": "member",
	}
}

// sign builds a token with the jwt library: method, header kid (omitted when
// kid is nil) and key as given.
func sign(t *testing.T, method jwt.SigningMethod, kid any, claims jwt.Claims, key any) string {
	t.Helper()
	tok := jwt.NewWithClaims(method, claims)
	if kid != nil {
		tok.Header["kid"] = kid
	}
	s, err := tok.SignedString(key)
	if err != nil {
		t.Fatalf("SignedString: %v", err)
	}
	return s
}

// b64 encodes a JSON value as a JWT segment.
func b64(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("json.Marshal: %v", err)
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

// hmacToken builds a token by hand with any header and an HMAC-SHA-256
// signature under secret, for attacks the library refuses to produce.
func hmacToken(t *testing.T, header map[string]any, claims jwt.MapClaims, secret []byte) string {
	t.Helper()
	signing := b64(t, header) + "." + b64(t, claims)
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(signing))
	return signing + "." + base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// replacePayload swaps a token's payload for claims, keeping its signature.
func replacePayload(t *testing.T, tok string, claims jwt.MapClaims) string {
	t.Helper()
	parts := strings.Split(tok, ".")
	parts[1] = b64(t, claims)
	return strings.Join(parts, ".")
}

func TestVerify(t *testing.T) {
	t.Parallel()

	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatalf("rsa.GenerateKey: %v", err)
	}

	tests := []struct {
		name string
		// build returns the token to verify; it may move the fixture's clock.
		build  func(t *testing.T, f *fixture) string
		mutate func(*Config)
		// wantCause is checked with errors.Is when set; nil with wantOK false
		// only checks ErrInvalid.
		wantOK    bool
		wantCause error
	}{
		{
			name:   "valid",
			build:  func(t *testing.T, f *fixture) string { return f.issue(t) },
			wantOK: true,
		},
		{
			name: "valid near the end of its life",
			build: func(t *testing.T, f *fixture) string {
				tok := f.issue(t)
				f.clk.Advance(DefaultAccessTTL - time.Second)
				return tok
			},
			wantOK: true,
		},
		{
			name: "expired but within leeway",
			build: func(t *testing.T, f *fixture) string {
				tok := f.issue(t)
				f.clk.Advance(DefaultAccessTTL + DefaultLeeway - time.Second)
				return tok
			},
			wantOK: true,
		},
		{
			name: "expired past leeway",
			build: func(t *testing.T, f *fixture) string {
				tok := f.issue(t)
				f.clk.Advance(DefaultAccessTTL + DefaultLeeway + time.Second)
				return tok
			},
			wantCause: jwt.ErrTokenExpired,
		},
		{
			name: "expired with a short TTL and leeway",
			build: func(t *testing.T, f *fixture) string {
				tok := f.issue(t)
				f.clk.Advance(5*time.Minute + 2*time.Second)
				return tok
			},
			mutate:    func(c *Config) { c.AccessTTL = 5 * time.Minute; c.Leeway = time.Second },
			wantCause: jwt.ErrTokenExpired,
		},
		{
			name: "not valid yet (issued by a clock an hour ahead)",
			build: func(t *testing.T, f *fixture) string {
				f.clk.Advance(time.Hour)
				tok := f.issue(t)
				f.clk.Advance(-time.Hour)
				return tok
			},
			wantCause: jwt.ErrTokenNotValidYet,
		},
		{
			name: "issued in the future without nbf",
			build: func(t *testing.T, f *fixture) string {
				c := validClaims()
				delete(c, "nbf")
				c["iat"] = start.Add(10 * time.Minute).Unix()
				c["exp"] = start.Add(20 * time.Minute).Unix()
				return sign(t, jwt.SigningMethodHS256, keyOne.ID, c, keyOne.Secret)
			},
			wantCause: jwt.ErrTokenUsedBeforeIssued,
		},
		{
			name: "crafted valid claims",
			build: func(t *testing.T, f *fixture) string {
				return sign(t, jwt.SigningMethodHS256, keyOne.ID, validClaims(), keyOne.Secret)
			},
			wantOK: true,
		},
		{
			name: "missing exp",
			build: func(t *testing.T, f *fixture) string {
				c := validClaims()
				delete(c, "exp")
				return sign(t, jwt.SigningMethodHS256, keyOne.ID, c, keyOne.Secret)
			},
			wantCause: jwt.ErrTokenRequiredClaimMissing,
		},
		{
			name: "exp as a string",
			build: func(t *testing.T, f *fixture) string {
				c := validClaims()
				c["exp"] = "tomorrow"
				return sign(t, jwt.SigningMethodHS256, keyOne.ID, c, keyOne.Secret)
			},
			wantCause: jwt.ErrTokenMalformed,
		},
		{
			name: "alg none",
			build: func(t *testing.T, f *fixture) string {
				return sign(t, jwt.SigningMethodNone, keyOne.ID, validClaims(), jwt.UnsafeAllowNoneSignatureType)
			},
			wantCause: jwt.ErrTokenSignatureInvalid,
		},
		{
			name: "alg none with a forged signature",
			build: func(t *testing.T, f *fixture) string {
				tok := sign(t, jwt.SigningMethodNone, keyOne.ID, validClaims(), jwt.UnsafeAllowNoneSignatureType)
				return tok + "c2ln"
			},
		},
		{
			name: "HS512 with the right secret",
			build: func(t *testing.T, f *fixture) string {
				return sign(t, jwt.SigningMethodHS512, keyOne.ID, validClaims(), keyOne.Secret)
			},
			wantCause: jwt.ErrTokenSignatureInvalid,
		},
		{
			name: "HS384 with the right secret",
			build: func(t *testing.T, f *fixture) string {
				return sign(t, jwt.SigningMethodHS384, keyOne.ID, validClaims(), keyOne.Secret)
			},
			wantCause: jwt.ErrTokenSignatureInvalid,
		},
		{
			name: "RS256 signed with an RSA key",
			build: func(t *testing.T, f *fixture) string {
				return sign(t, jwt.SigningMethodRS256, keyOne.ID, validClaims(), rsaKey)
			},
			wantCause: jwt.ErrTokenSignatureInvalid,
		},
		{
			name: "RS256 header over an HMAC signature (algorithm confusion)",
			build: func(t *testing.T, f *fixture) string {
				h := map[string]any{"alg": "RS256", "typ": "JWT", "kid": keyOne.ID}
				return hmacToken(t, h, validClaims(), keyOne.Secret)
			},
			wantCause: jwt.ErrTokenSignatureInvalid,
		},
		{
			name: "lower-case hs256 header",
			build: func(t *testing.T, f *fixture) string {
				h := map[string]any{"alg": "hs256", "typ": "JWT", "kid": keyOne.ID}
				return hmacToken(t, h, validClaims(), keyOne.Secret)
			},
		},
		{
			name: "hand-built HS256 token is fine (control for the above)",
			build: func(t *testing.T, f *fixture) string {
				h := map[string]any{"alg": "HS256", "typ": "JWT", "kid": keyOne.ID}
				return hmacToken(t, h, validClaims(), keyOne.Secret)
			},
			wantOK: true,
		},
		{
			name: "wrong audience",
			build: func(t *testing.T, f *fixture) string {
				other := newFixture(t, func(c *Config) { c.Audience = "bizmsg-tenant-api" })
				return other.issue(t)
			},
			wantCause: jwt.ErrTokenInvalidAudience,
		},
		{
			name: "missing audience",
			build: func(t *testing.T, f *fixture) string {
				c := validClaims()
				delete(c, "aud")
				return sign(t, jwt.SigningMethodHS256, keyOne.ID, c, keyOne.Secret)
			},
			wantCause: jwt.ErrTokenRequiredClaimMissing,
		},
		{
			name: "wrong issuer",
			build: func(t *testing.T, f *fixture) string {
				other := newFixture(t, func(c *Config) { c.Issuer = "someone-else" })
				return other.issue(t)
			},
			wantCause: jwt.ErrTokenInvalidIssuer,
		},
		{
			name: "tampered signature",
			build: func(t *testing.T, f *fixture) string {
				tok := f.issue(t)
				i := strings.LastIndex(tok, ".") + 10
				c := byte('A')
				if tok[i] == 'A' {
					c = 'B'
				}
				return tok[:i] + string(c) + tok[i+1:]
			},
			wantCause: jwt.ErrTokenSignatureInvalid,
		},
		{
			name: "signature removed",
			build: func(t *testing.T, f *fixture) string {
				tok := f.issue(t)
				return tok[:strings.LastIndex(tok, ".")+1]
			},
			wantCause: jwt.ErrTokenSignatureInvalid,
		},
		{
			name: "tampered payload (role raised to owner)",
			build: func(t *testing.T, f *fixture) string {
				c := validClaims()
				tok := sign(t, jwt.SigningMethodHS256, keyOne.ID, c, keyOne.Secret)
				c["role"] = "owner"
				return replacePayload(t, tok, c)
			},
			wantCause: jwt.ErrTokenSignatureInvalid,
		},
		{
			name: "tampered payload (other organization)",
			build: func(t *testing.T, f *fixture) string {
				tok := f.issue(t)
				c := validClaims()
				c["org"] = 8
				return replacePayload(t, tok, c)
			},
			wantCause: jwt.ErrTokenSignatureInvalid,
		},
		{
			name: "known kid, other secret",
			build: func(t *testing.T, f *fixture) string {
				return sign(t, jwt.SigningMethodHS256, keyStolen.ID, validClaims(), keyStolen.Secret)
			},
			wantCause: jwt.ErrTokenSignatureInvalid,
		},
		{
			name: "unknown kid",
			build: func(t *testing.T, f *fixture) string {
				return sign(t, jwt.SigningMethodHS256, keyTwo.ID, validClaims(), keyTwo.Secret)
			},
			wantCause: jwt.ErrTokenUnverifiable,
		},
		{
			name: "unknown kid, signed with a known secret",
			build: func(t *testing.T, f *fixture) string {
				return sign(t, jwt.SigningMethodHS256, "k9", validClaims(), keyOne.Secret)
			},
			wantCause: jwt.ErrTokenUnverifiable,
		},
		{
			name: "missing kid",
			build: func(t *testing.T, f *fixture) string {
				return sign(t, jwt.SigningMethodHS256, nil, validClaims(), keyOne.Secret)
			},
			wantCause: jwt.ErrTokenUnverifiable,
		},
		{
			name: "empty kid",
			build: func(t *testing.T, f *fixture) string {
				return sign(t, jwt.SigningMethodHS256, "", validClaims(), keyOne.Secret)
			},
			wantCause: jwt.ErrTokenUnverifiable,
		},
		{
			name: "kid not a string",
			build: func(t *testing.T, f *fixture) string {
				return sign(t, jwt.SigningMethodHS256, 1, validClaims(), keyOne.Secret)
			},
			wantCause: jwt.ErrTokenUnverifiable,
		},
		{
			name: "subject not a user id",
			build: func(t *testing.T, f *fixture) string {
				c := validClaims()
				c["sub"] = "admin@example.com"
				return sign(t, jwt.SigningMethodHS256, keyOne.ID, c, keyOne.Secret)
			},
			wantCause: jwt.ErrTokenInvalidSubject,
		},
		{
			name: "missing org",
			build: func(t *testing.T, f *fixture) string {
				c := validClaims()
				delete(c, "org")
				return sign(t, jwt.SigningMethodHS256, keyOne.ID, c, keyOne.Secret)
			},
			wantCause: jwt.ErrTokenRequiredClaimMissing,
		},
		{
			name: "missing role",
			build: func(t *testing.T, f *fixture) string {
				c := validClaims()
				delete(c, "role")
				return sign(t, jwt.SigningMethodHS256, keyOne.ID, c, keyOne.Secret)
			},
			wantCause: jwt.ErrTokenRequiredClaimMissing,
		},
		{
			name:      "empty string",
			build:     func(t *testing.T, f *fixture) string { return "" },
			wantCause: jwt.ErrTokenMalformed,
		},
		{
			name:      "not a JWT",
			build:     func(t *testing.T, f *fixture) string { return "bmr_notajwt" },
			wantCause: jwt.ErrTokenMalformed,
		},
		{
			name:      "garbage segments",
			build:     func(t *testing.T, f *fixture) string { return "a.b.c" },
			wantCause: jwt.ErrTokenMalformed,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, tt.mutate)
			tok := tt.build(t, f)
			claims, err := f.iss.Verify(tok)
			if tt.wantOK {
				if err != nil {
					t.Fatalf("Verify: %v", err)
				}
				if claims.UserID != 42 || claims.OrgID != 7 || claims.Role == "" {
					t.Fatalf("claims = %+v", claims)
				}
				return
			}
			if !errors.Is(err, ErrInvalid) || claims != nil {
				t.Fatalf("Verify = %+v, %v; want nil, ErrInvalid", claims, err)
			}
			t.Logf("refused: %v", err)
			if tt.wantCause != nil && !errors.Is(err, tt.wantCause) {
				t.Fatalf("Verify error = %v; want cause %v", err, tt.wantCause)
			}
		})
	}
}

func TestIssueClaims(t *testing.T) {
	t.Parallel()

	f := newFixture(t, nil)
	f.clk.Set(start.Add(400 * time.Millisecond))
	tok, exp, err := f.iss.Issue(42, 7, "owner")
	if err != nil {
		t.Fatalf("Issue: %v", err)
	}
	if want := start.Add(DefaultAccessTTL); !exp.Equal(want) {
		t.Fatalf("expiresAt = %v, want %v", exp, want)
	}

	// Read the token without verification to check what was written.
	raw := jwt.MapClaims{}
	parsed, _, err := jwt.NewParser().ParseUnverified(tok, raw)
	if err != nil {
		t.Fatalf("ParseUnverified: %v", err)
	}
	if parsed.Header["alg"] != "HS256" || parsed.Header["kid"] != keyOne.ID || parsed.Header["typ"] != "JWT" {
		t.Fatalf("header = %v", parsed.Header)
	}
	want := map[string]any{
		"iss":  DefaultIssuer,
		"sub":  "42",
		"exp":  float64(start.Add(DefaultAccessTTL).Unix()),
		"iat":  float64(start.Unix()),
		"nbf":  float64(start.Unix()),
		"org":  float64(7),
		"role": "owner",
	}
	for k, v := range want {
		if raw[k] != v {
			t.Errorf("claim %s = %v (%T), want %v", k, raw[k], raw[k], v)
		}
	}
	if aud, err := raw.GetAudience(); err != nil || len(aud) != 1 || aud[0] != DefaultAudience {
		t.Errorf("aud = %v, %v", aud, err)
	}
	if jti, _ := raw["jti"].(string); len(jti) < 22 {
		t.Errorf("jti = %q, want a random id", raw["jti"])
	}

	claims, err := f.iss.Verify(tok)
	if err != nil {
		t.Fatalf("Verify: %v", err)
	}
	if claims.UserID != 42 || claims.OrgID != 7 || claims.Role != "owner" || claims.Subject != "42" {
		t.Fatalf("claims = %+v", claims)
	}
	if !claims.ExpiresAt.Equal(exp) {
		t.Fatalf("claims exp %v != returned %v", claims.ExpiresAt.Time, exp)
	}

	// Every token gets its own jti.
	tok2, _, err := f.iss.Issue(42, 7, "owner")
	if err != nil {
		t.Fatalf("Issue: %v", err)
	}
	claims2, err := f.iss.Verify(tok2)
	if err != nil {
		t.Fatalf("Verify: %v", err)
	}
	if claims.ID == claims2.ID {
		t.Fatalf("two tokens share jti %q", claims.ID)
	}
	if f.iss.AccessTTL() != DefaultAccessTTL {
		t.Fatalf("AccessTTL() = %v", f.iss.AccessTTL())
	}
}

func TestIssueRefusesBadInput(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name   string
		userID int64
		orgID  int64
		role   string
	}{
		{"zero user", 0, 1, "member"},
		{"negative user", -1, 1, "member"},
		{"zero org", 1, 0, "member"},
		{"empty role", 1, 1, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, nil)
			if tok, _, err := f.iss.Issue(tt.userID, tt.orgID, tt.role); err == nil {
				t.Fatalf("Issue = %q, want error", tok)
			}
		})
	}
}

func TestKeyRotation(t *testing.T) {
	t.Parallel()

	clk := clock.NewFake(start)
	newIssuer := func(keys ...Key) *Issuer {
		iss, err := NewIssuer(Config{Keys: keys, Clock: clk})
		if err != nil {
			t.Fatalf("NewIssuer: %v", err)
		}
		return iss
	}
	before := newIssuer(keyOne)         // only the old key
	during := newIssuer(keyTwo, keyOne) // new key signs, old still verifies
	after := newIssuer(keyTwo)          // old key removed
	oldTok, _, err := before.Issue(1, 1, "member")
	if err != nil {
		t.Fatalf("Issue: %v", err)
	}
	newTok, _, err := during.Issue(1, 1, "member")
	if err != nil {
		t.Fatalf("Issue: %v", err)
	}

	tests := []struct {
		name   string
		iss    *Issuer
		tok    string
		wantOK bool
	}{
		{"old token, old issuer", before, oldTok, true},
		{"old token during rotation", during, oldTok, true},
		{"new token during rotation", during, newTok, true},
		{"new token after rotation", after, newTok, true},
		{"old token after rotation", after, oldTok, false},
		{"new token on old issuer", before, newTok, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := tt.iss.Verify(tt.tok)
			if tt.wantOK && err != nil {
				t.Fatalf("Verify: %v", err)
			}
			if !tt.wantOK && !errors.Is(err, ErrInvalid) {
				t.Fatalf("Verify error = %v, want ErrInvalid", err)
			}
		})
	}

	parsed, _, err := jwt.NewParser().ParseUnverified(newTok, jwt.MapClaims{})
	if err != nil {
		t.Fatalf("ParseUnverified: %v", err)
	}
	if parsed.Header["kid"] != keyTwo.ID {
		t.Fatalf("kid = %v, want the first key's id %q", parsed.Header["kid"], keyTwo.ID)
	}
}

func TestNewIssuerConfig(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name    string
		cfg     Config
		wantErr bool
	}{
		{"defaults", Config{Keys: []Key{keyOne}}, false},
		{"two keys", Config{Keys: []Key{keyOne, keyTwo}}, false},
		{"TTL at limit", Config{Keys: []Key{keyOne}, AccessTTL: MaxAccessTTL}, false},
		{"short TTL", Config{Keys: []Key{keyOne}, AccessTTL: time.Minute}, false},
		{"no keys", Config{}, true},
		{"empty key id", Config{Keys: []Key{{Secret: keyOne.Secret}}}, true},
		{"short secret", Config{Keys: []Key{{ID: "k", Secret: make([]byte, MinSecretLength-1)}}}, true},
		{"short second secret", Config{Keys: []Key{keyOne, {ID: "k2", Secret: []byte("short")}}}, true},
		{"duplicate ids", Config{Keys: []Key{keyOne, keyStolen}}, true},
		{"TTL over 15 minutes", Config{Keys: []Key{keyOne}, AccessTTL: MaxAccessTTL + time.Second}, true},
		{"negative TTL", Config{Keys: []Key{keyOne}, AccessTTL: -time.Minute}, true},
		{"negative leeway", Config{Keys: []Key{keyOne}, Leeway: -time.Second}, true},
		{"huge leeway", Config{Keys: []Key{keyOne}, Leeway: time.Hour}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			iss, err := NewIssuer(tt.cfg)
			if tt.wantErr {
				if !errors.Is(err, ErrConfig) || iss != nil {
					t.Fatalf("NewIssuer = %v, %v; want nil, ErrConfig", iss, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("NewIssuer: %v", err)
			}
		})
	}
}

func TestNewIssuerDefaultsAndCopies(t *testing.T) {
	t.Parallel()

	secret := bytes.Clone(keyOne.Secret)
	iss, err := NewIssuer(Config{Keys: []Key{{ID: "k1", Secret: secret}}})
	if err != nil {
		t.Fatalf("NewIssuer: %v", err)
	}
	if iss.cfg.Issuer != DefaultIssuer || iss.cfg.Audience != DefaultAudience ||
		iss.cfg.AccessTTL != DefaultAccessTTL || iss.cfg.Leeway != DefaultLeeway {
		t.Fatalf("defaults not applied: %+v", iss.cfg)
	}
	if _, ok := iss.cfg.Clock.(clock.Real); !ok {
		t.Fatalf("Clock = %T, want clock.Real", iss.cfg.Clock)
	}
	tok, _, err := iss.Issue(1, 1, "member")
	if err != nil {
		t.Fatalf("Issue: %v", err)
	}
	// Changing the caller's secret afterwards must not change the issuer's.
	secret[0] ^= 0xff
	if _, err := iss.Verify(tok); err != nil {
		t.Fatalf("Verify after caller mutated its secret: %v", err)
	}
}
