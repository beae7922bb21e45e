// Package token issues and verifies the Central API's credentials: short-lived
// JWT access tokens and opaque refresh tokens.
//
// Access tokens are HS256 JWTs built and checked only with
// github.com/golang-jwt/jwt/v5. Verification pins the algorithm to HS256,
// requires exp, checks iss, aud, nbf and iat with a small leeway, and picks the
// secret by the token's kid header. Signing always uses the first configured
// key; every configured key verifies, so a secret is rotated by putting the new
// key first, keeping the old one second for one access-token lifetime, then
// removing it.
package token

import (
	"crypto/rand"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/bizmsg/platform/platform/clock"
	"github.com/bizmsg/platform/platform/defaults"
)

// Defaults and limits for Config.
const (
	// DefaultIssuer is the iss claim when Config.Issuer is empty.
	DefaultIssuer = "bizmsg-central"
	// DefaultAudience is the aud claim when Config.Audience is empty.
	DefaultAudience = "bizmsg-central-api"
	// DefaultAccessTTL is the access-token lifetime when Config.AccessTTL is zero.
	DefaultAccessTTL = 15 * time.Minute
	// MaxAccessTTL is the longest access-token lifetime allowed (docs/api.md,
	// §Central API).
	MaxAccessTTL = 15 * time.Minute
	// DefaultLeeway is the clock skew tolerated when Config.Leeway is zero.
	DefaultLeeway = 30 * time.Second
	// MaxLeeway is the largest clock skew tolerance allowed.
	MaxLeeway = 5 * time.Minute
	// MinSecretLength is the shortest signing secret accepted (256 bits, the
	// size of the HS256 output).
	MinSecretLength = 32
)

// algorithm is the only signing algorithm issued or accepted.
const algorithm = "HS256"

var (
	// ErrConfig is wrapped by every error NewIssuer returns.
	ErrConfig = errors.New("token: invalid config")
	// ErrInvalid is wrapped by every error Verify returns, together with the
	// cause (for example jwt.ErrTokenExpired), so callers answer 401 with
	// errors.Is(err, ErrInvalid) and can still log why.
	ErrInvalid = errors.New("token: invalid access token")
)

// Key is one HS256 signing secret and the id written into the kid header of
// the tokens it signs.
type Key struct {
	// ID names the key in the kid header. It must be non-empty and unique.
	ID string
	// Secret is the HMAC secret, at least MinSecretLength bytes.
	Secret []byte
}

// Config configures an Issuer. Zero fields take the documented defaults.
type Config struct {
	// Issuer is the iss claim written and required. Default DefaultIssuer.
	Issuer string
	// Audience is the aud claim written and required. Default DefaultAudience.
	Audience string
	// AccessTTL is how long an access token lives. Default DefaultAccessTTL;
	// must be positive and at most MaxAccessTTL.
	AccessTTL time.Duration
	// Leeway is the clock skew tolerated when checking exp, nbf and iat.
	// Default DefaultLeeway (zero means the default); must be at most MaxLeeway.
	Leeway time.Duration
	// Keys are the signing keys. Keys[0] signs new tokens; every key verifies.
	// At least one is required.
	Keys []Key
	// Clock is the time source. Default clock.Real{}.
	Clock clock.Clock
}

// withDefaults returns a copy of c with defaults filled in and Keys deep-copied.
func (c Config) withDefaults() Config {
	if c.Issuer == "" {
		c.Issuer = DefaultIssuer
	}
	if c.Audience == "" {
		c.Audience = DefaultAudience
	}
	if c.AccessTTL == 0 {
		c.AccessTTL = DefaultAccessTTL
	}
	if c.Leeway == 0 {
		c.Leeway = DefaultLeeway
	}
	defaults.Clock(&c.Clock)
	keys := make([]Key, len(c.Keys))
	for i, k := range c.Keys {
		keys[i] = Key{ID: k.ID, Secret: append([]byte(nil), k.Secret...)}
	}
	c.Keys = keys
	return c
}

// validate checks a config that already has its defaults.
func (c Config) validate() error {
	if c.AccessTTL <= 0 || c.AccessTTL > MaxAccessTTL {
		return fmt.Errorf("%w: AccessTTL %s must be in (0, %s]", ErrConfig, c.AccessTTL, MaxAccessTTL)
	}
	if c.Leeway < 0 || c.Leeway > MaxLeeway {
		return fmt.Errorf("%w: Leeway %s must be in [0, %s]", ErrConfig, c.Leeway, MaxLeeway)
	}
	if len(c.Keys) == 0 {
		return fmt.Errorf("%w: at least one key is required", ErrConfig)
	}
	seen := make(map[string]bool, len(c.Keys))
	for i, k := range c.Keys {
		if k.ID == "" {
			return fmt.Errorf("%w: key %d has an empty ID", ErrConfig, i)
		}
		if seen[k.ID] {
			return fmt.Errorf("%w: duplicate key ID %q", ErrConfig, k.ID)
		}
		seen[k.ID] = true
		if len(k.Secret) < MinSecretLength {
			return fmt.Errorf("%w: key %q secret is %d bytes, need at least %d", ErrConfig, k.ID, len(k.Secret), MinSecretLength)
		}
	}
	return nil
}

// Claims are the claims of an access token.
type Claims struct {
	jwt.RegisteredClaims
	// OrgID is the organization the user acted in when the token was issued.
	OrgID int64 `json:"org"`
	// Role is the user's role in that organization (owner, admin, member).
	Role string `json:"role"`
	// UserID is the subject as a number. Verify fills it from the sub claim; it
	// is not serialized on its own.
	UserID int64 `json:"-"`
}

// Issuer issues and verifies access tokens. It is safe for concurrent use.
type Issuer struct {
	cfg    Config
	keys   map[string][]byte
	parser *jwt.Parser
}

// NewIssuer validates cfg, fills its defaults and returns an Issuer. The keys'
// secrets are copied.
func NewIssuer(cfg Config) (*Issuer, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	keys := make(map[string][]byte, len(cfg.Keys))
	for _, k := range cfg.Keys {
		keys[k.ID] = k.Secret
	}
	parser := jwt.NewParser(
		jwt.WithValidMethods([]string{algorithm}),
		jwt.WithExpirationRequired(),
		jwt.WithIssuedAt(),
		jwt.WithIssuer(cfg.Issuer),
		jwt.WithAudience(cfg.Audience),
		jwt.WithLeeway(cfg.Leeway),
		jwt.WithTimeFunc(cfg.Clock.Now),
		jwt.WithStrictDecoding(),
	)
	return &Issuer{cfg: cfg, keys: keys, parser: parser}, nil
}

// AccessTTL returns the configured access-token lifetime, for the expires_in
// field of token responses.
func (i *Issuer) AccessTTL() time.Duration { return i.cfg.AccessTTL }

// Issue signs an access token for userID acting in orgID with role. It returns
// the token and its expiry (whole seconds, as in the exp claim).
func (i *Issuer) Issue(userID int64, orgID int64, role string) (token string, expiresAt time.Time, err error) {
	if userID <= 0 {
		return "", time.Time{}, fmt.Errorf("token: issuing: user id %d must be positive", userID)
	}
	if orgID <= 0 {
		return "", time.Time{}, fmt.Errorf("token: issuing: organization id %d must be positive", orgID)
	}
	if role == "" {
		return "", time.Time{}, errors.New("token: issuing: role is required")
	}

	now := jwt.NewNumericDate(i.cfg.Clock.Now())
	exp := jwt.NewNumericDate(now.Add(i.cfg.AccessTTL))
	claims := Claims{
		RegisteredClaims: jwt.RegisteredClaims{
			Issuer:    i.cfg.Issuer,
			Subject:   strconv.FormatInt(userID, 10),
			Audience:  jwt.ClaimStrings{i.cfg.Audience},
			ExpiresAt: exp,
			NotBefore: now,
			IssuedAt:  now,
			ID:        rand.Text(),
		},
		OrgID: orgID,
		Role:  role,
	}
	key := i.cfg.Keys[0]
	t := jwt.NewWithClaims(jwt.SigningMethodHS256, claims)
	t.Header["kid"] = key.ID
	signed, err := t.SignedString(key.Secret)
	if err != nil {
		return "", time.Time{}, fmt.Errorf("token: signing: %w", err)
	}
	return signed, exp.Time, nil
}

// Verify checks an access token's signature and claims and returns the claims.
// Every failure wraps ErrInvalid and the cause.
func (i *Issuer) Verify(token string) (*Claims, error) {
	claims := new(Claims)
	if _, err := i.parser.ParseWithClaims(token, claims, i.keyFor); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	uid, err := strconv.ParseInt(claims.Subject, 10, 64)
	if err != nil || uid <= 0 {
		return nil, fmt.Errorf("%w: %w: subject %q is not a user id", ErrInvalid, jwt.ErrTokenInvalidSubject, claims.Subject)
	}
	if claims.OrgID <= 0 || claims.Role == "" || claims.ID == "" {
		return nil, fmt.Errorf("%w: %w: org, role and jti are required", ErrInvalid, jwt.ErrTokenRequiredClaimMissing)
	}
	claims.UserID = uid
	return claims, nil
}

// keyFor is the jwt.Keyfunc: it returns the secret named by the kid header.
// The parser has already refused any algorithm but HS256; the method check is
// repeated here so that a change of parser options cannot open the door to
// algorithm confusion.
func (i *Issuer) keyFor(t *jwt.Token) (any, error) {
	if t.Method != jwt.SigningMethodHS256 {
		return nil, fmt.Errorf("unexpected signing method %q", t.Method.Alg())
	}
	kid, ok := t.Header["kid"].(string)
	if !ok || kid == "" {
		return nil, errors.New("kid header missing or not a string")
	}
	secret, ok := i.keys[kid]
	if !ok {
		return nil, fmt.Errorf("unknown kid %q", kid)
	}
	return secret, nil
}
