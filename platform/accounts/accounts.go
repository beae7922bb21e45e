package accounts

import (
	"context"
	"errors"
	"fmt"
	"net/mail"
	"strings"
	"time"
	"unicode"

	"github.com/jackc/pgx/v5"

	"github.com/bizmsg/platform/platform/apperr"
	"github.com/bizmsg/platform/platform/clock"
	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/password"
	"github.com/bizmsg/platform/platform/token"
)

// Field limits.
const (
	maxNameLength  = 200
	maxEmailLength = 254
)

// Registration is the body of POST /register.
type Registration struct {
	OrganizationName string `json:"organization_name"`
	Name             string `json:"name"`
	Email            string `json:"email"`
	Password         string `json:"password"`
}

// Session is what login, registration and refresh hand out.
type Session struct {
	AccessToken  string `json:"access_token"`
	TokenType    string `json:"token_type"`
	ExpiresIn    int64  `json:"expires_in"`
	RefreshToken string `json:"refresh_token"`
}

// Registered is the result of a registration: the owner, the organization
// and a session.
type Registered struct {
	User         User         `json:"user"`
	Organization Organization `json:"organization"`
	Session
}

// Me is the signed-in user's context.
type Me struct {
	User         User         `json:"user"`
	Organization Organization `json:"organization"`
	Role         string       `json:"role"`
	Subscription Subscription `json:"subscription"`
}

// checkName validates a required display name: trimmed, 1..200 characters,
// no control characters (a name is shown in lists and logs on one line).
func checkName(v *apperr.Validation, field, s string) string {
	s = strings.TrimSpace(s)
	if s == "" {
		v.Add(field, "is required")
	} else {
		v.Text(field, s, maxNameLength)
	}
	return s
}

// checkEmail validates and normalises (trims, lower-cases) an email address.
func checkEmail(v *apperr.Validation, s string) string {
	s = strings.ToLower(strings.TrimSpace(s))
	if s == "" {
		v.Add("email", "is required")
		return s
	}
	addr, err := mail.ParseAddress(s)
	if err != nil || addr.Address != s || len(s) > maxEmailLength || !strings.Contains(s[strings.LastIndexByte(s, '@')+1:], ".") {
		v.Add("email", "must be a valid email address")
	}
	return s
}

// checkPassword applies the password policy.
func checkPassword(v *apperr.Validation, field, s string) {
	if s == "" {
		v.Add(field, "is required")
		return
	}
	if err := password.Check(s); err != nil {
		v.Add(field, err.Error())
	}
}

// errEmailTaken is the 409 for an email that already has an account.
func errEmailTaken() error {
	return apperr.Conflict("email_taken", "An account with this email already exists.")
}

// Validate checks every field of a registration at once (422 naming each
// bad one) and returns it normalised: names trimmed, the email trimmed and
// lower-cased. The password is kept as given: any characters but NUL
// (which the JSON decoding refuses) may be in it.
func (r Registration) Validate() (Registration, error) {
	var v apperr.Validation
	r.OrganizationName = checkName(&v, "organization_name", r.OrganizationName)
	r.Name = checkName(&v, "name", r.Name)
	r.Email = checkEmail(&v, r.Email)
	checkPassword(&v, "password", r.Password)
	if err := v.Err(); err != nil {
		return Registration{}, err
	}
	return r, nil
}

// Register creates an organization (subscription trialing, the configured
// default daily limit), its owner, the owner's membership and the
// organization's tenant schema in one transaction, so a failure (a taken
// email: 409 email_taken) leaves nothing behind, and starts a session.
func (s *Service) Register(ctx context.Context, r Registration) (*Registered, error) {
	r, err := r.Validate()
	if err != nil {
		return nil, err
	}
	hash, err := password.Hash(r.Password)
	if err != nil {
		return nil, fmt.Errorf("register: %w", err)
	}
	refresh, refreshHash, err := token.NewRefresh()
	if err != nil {
		return nil, fmt.Errorf("register: %w", err)
	}
	now := clock.Stamp(s.cfg.Clock.Now())
	out := Registered{
		User: User{Name: r.Name, Email: r.Email, Role: RoleOwner, CreatedAt: now},
		Organization: Organization{
			Name: r.OrganizationName, SubscriptionStatus: "trialing",
			DefaultDailyLimit: s.cfg.DefaultDailyLimit, CreatedAt: now,
		},
	}
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		org := &out.Organization
		if err := tx.QueryRow(ctx, `
			INSERT INTO central.organizations (name, subscription_status, default_daily_limit, created_at)
			VALUES ($1, $2, $3, $4) RETURNING id`,
			org.Name, org.SubscriptionStatus, org.DefaultDailyLimit, now).Scan(&org.ID); err != nil {
			return fmt.Errorf("insert organization: %w", err)
		}
		org.Tenant = db.Tenant{OrgID: org.ID, Schema: db.SchemaFor(org.ID)}
		if _, err := tx.Exec(ctx, `UPDATE central.organizations SET schema_name = $2 WHERE id = $1`, org.ID, org.Tenant.Schema); err != nil {
			return fmt.Errorf("set schema name: %w", err)
		}
		if _, err := s.cfg.Migrator.TenantTx(ctx, tx, org.Tenant); err != nil {
			return fmt.Errorf("provision tenant schema: %w", err)
		}
		if err := insertMember(ctx, tx, org.ID, &out.User, hash); err != nil {
			return err
		}
		return s.insertRefresh(ctx, tx, out.User.ID, org.ID, "", refreshHash, now)
	})
	if _, ok := apperr.As(err); ok {
		return nil, err
	}
	if err != nil {
		return nil, fmt.Errorf("register: %w", err)
	}
	sess, err := s.session(out.User.ID, out.Organization.ID, RoleOwner, refresh)
	if err != nil {
		return nil, err
	}
	out.Session = *sess
	return &out, nil
}

// insertMember inserts user u of organization orgID, with its password
// hash, and its membership (u.Role, u.CreatedAt), and sets u.ID. An email
// that already has an account is 409 email_taken.
func insertMember(ctx context.Context, tx pgx.Tx, orgID int64, u *User, hash string) error {
	err := tx.QueryRow(ctx, `
		INSERT INTO central.users (email, name, password_hash, created_at)
		VALUES ($1, $2, $3, $4) RETURNING id`, u.Email, u.Name, hash, u.CreatedAt).Scan(&u.ID)
	if db.IsUniqueViolation(err, "users_email_key") {
		return errEmailTaken()
	}
	if err != nil {
		return fmt.Errorf("insert user: %w", err)
	}
	if _, err := tx.Exec(ctx, `
		INSERT INTO central.memberships (organization_id, user_id, role, created_at)
		VALUES ($1, $2, $3, $4)`, orgID, u.ID, u.Role, u.CreatedAt); err != nil {
		return fmt.Errorf("insert membership: %w", err)
	}
	return nil
}

// insertRefresh stores a refresh token's hash, in family (a new family when
// family is "").
func (s *Service) insertRefresh(ctx context.Context, tx pgx.Tx, userID, orgID int64, family string, hash []byte, now time.Time) error {
	_, err := tx.Exec(ctx, `
		INSERT INTO central.refresh_tokens (user_id, organization_id, family_id, token_hash, expires_at, created_at)
		VALUES ($1, $2, coalesce(nullif($3, '')::uuid, gen_random_uuid()), $4, $5, $6)`,
		userID, orgID, family, hash, now.Add(s.cfg.RefreshTTL), now)
	if err != nil {
		return fmt.Errorf("insert refresh token: %w", err)
	}
	return nil
}

// session signs an access token and pairs it with the refresh token.
func (s *Service) session(userID, orgID int64, role, refresh string) (*Session, error) {
	access, _, err := s.cfg.Issuer.Issue(userID, orgID, role)
	if err != nil {
		return nil, fmt.Errorf("issue access token: %w", err)
	}
	return &Session{
		AccessToken:  access,
		TokenType:    "Bearer",
		ExpiresIn:    int64(s.cfg.Issuer.AccessTTL() / time.Second),
		RefreshToken: refresh,
	}, nil
}

// errBadCredentials is the one answer for an unknown email and a wrong
// password alike.
func errBadCredentials() error {
	return apperr.New(apperr.KindUnauthenticated, "invalid_credentials", "The email or password is incorrect.")
}

// Credentials is the body of POST /login.
type Credentials struct {
	Email    string `json:"email"`
	Password string `json:"password"`
}

// Validate checks that both fields are given and that the email holds no
// control character (no account can have one), a 422 naming each bad
// field, and returns the credentials with the email trimmed and
// lower-cased. Anything else about the email is left to the password
// check, so a malformed address and a wrong one get the same 401.
func (c Credentials) Validate() (Credentials, error) {
	var v apperr.Validation
	c.Email = strings.ToLower(strings.TrimSpace(c.Email))
	switch {
	case c.Email == "":
		v.Add("email", "is required")
	case strings.IndexFunc(c.Email, unicode.IsControl) >= 0:
		v.Add("email", "must not contain control characters")
	}
	if c.Password == "" {
		v.Add("password", "is required")
	}
	if err := v.Err(); err != nil {
		return Credentials{}, err
	}
	return c, nil
}

// Login checks credentials and starts a session (a new refresh token
// family). An unknown email and a wrong password get the same 401 and take
// the same time (DummyVerify). Attempts are throttled per account and per
// client address (addr); over a limit the answer is 429 with Retry-After,
// before any password work.
func (s *Service) Login(ctx context.Context, c Credentials, addr string) (*Session, error) {
	c, err := c.Validate()
	if err != nil {
		return nil, err
	}
	email := c.Email
	now := s.cfg.Clock.Now()
	account, address := throttleKeys(email, addr)
	if err := s.reserveLogin(ctx, account, address, now); err != nil {
		return nil, err
	}
	var (
		userID, orgID int64
		hash, role    string
	)
	err = s.pool.QueryRow(ctx, `
		SELECT u.id, u.password_hash, m.organization_id, m.role
		FROM central.users u JOIN central.memberships m ON m.user_id = u.id
		WHERE lower(u.email) = $1
		ORDER BY m.created_at, m.organization_id
		LIMIT 1`, email).Scan(&userID, &hash, &orgID, &role)
	if errors.Is(err, pgx.ErrNoRows) {
		password.DummyVerify(c.Password)
		return nil, errBadCredentials()
	}
	if err != nil {
		return nil, fmt.Errorf("login: %w", err)
	}
	ok, err := password.Verify(hash, c.Password)
	if err != nil {
		return nil, fmt.Errorf("login: user %d: %w", userID, err)
	}
	if !ok {
		return nil, errBadCredentials()
	}
	if err := s.releaseLogin(ctx, account, address); err != nil {
		s.cfg.Logger.WarnContext(ctx, "login throttle release failed", "error", err)
	}
	if password.NeedsRehash(hash) {
		s.rehash(ctx, userID, c.Password)
	}
	return s.startSession(ctx, userID, orgID, role)
}

// rehash replaces a password hash made with older parameters; a failure is
// logged, the login goes on.
func (s *Service) rehash(ctx context.Context, userID int64, plain string) {
	h, err := password.Hash(plain)
	if err == nil {
		_, err = s.pool.Exec(ctx, `UPDATE central.users SET password_hash = $2 WHERE id = $1`, userID, h)
	}
	if err != nil {
		s.cfg.Logger.WarnContext(ctx, "password rehash failed", "user_id", userID, "error", err)
	}
}

// startSession opens a new refresh token family and signs an access token.
func (s *Service) startSession(ctx context.Context, userID, orgID int64, role string) (*Session, error) {
	refresh, refreshHash, err := token.NewRefresh()
	if err != nil {
		return nil, fmt.Errorf("start session: %w", err)
	}
	now := clock.Stamp(s.cfg.Clock.Now())
	if err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		return s.insertRefresh(ctx, tx, userID, orgID, "", refreshHash, now)
	}); err != nil {
		return nil, fmt.Errorf("start session: %w", err)
	}
	return s.session(userID, orgID, role, refresh)
}

// errBadRefresh is the 401 for a refresh token that is unknown, expired,
// already used or revoked.
func errBadRefresh() error {
	return apperr.New(apperr.KindUnauthenticated, "invalid_refresh_token", "The refresh token is invalid or expired.")
}

// Refresh rotates a refresh token: the presented token stops working and a
// new one of the same family is returned with a new access token. Presenting
// a token that was already rotated is taken as theft: the whole family is
// revoked (the legitimate holder signs in again) and the answer is 401.
func (s *Service) Refresh(ctx context.Context, plain string) (*Session, error) {
	if !token.ValidRefresh(plain) {
		return nil, errBadRefresh()
	}
	now := clock.Stamp(s.cfg.Clock.Now())
	next, nextHash, err := token.NewRefresh()
	if err != nil {
		return nil, fmt.Errorf("refresh: %w", err)
	}
	var (
		userID, orgID int64
		role          string
		refused       bool
	)
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var (
			id            int64
			family        string
			expires       time.Time
			used, revoked *time.Time
		)
		err := tx.QueryRow(ctx, `
			SELECT id, user_id, organization_id, family_id::text, expires_at, used_at, revoked_at
			FROM central.refresh_tokens WHERE token_hash = $1 FOR UPDATE`, token.HashRefresh(plain),
		).Scan(&id, &userID, &orgID, &family, &expires, &used, &revoked)
		if errors.Is(err, pgx.ErrNoRows) {
			refused = true
			return nil
		}
		if err != nil {
			return fmt.Errorf("load refresh token: %w", err)
		}
		if revoked != nil || !now.Before(expires) {
			refused = true
			return nil
		}
		err = tx.QueryRow(ctx, `SELECT role FROM central.memberships WHERE organization_id = $1 AND user_id = $2`,
			orgID, userID).Scan(&role)
		if used != nil || errors.Is(err, pgx.ErrNoRows) {
			// Reuse of a rotated token, or a user no longer in the
			// organization: end the whole family. Committed, then refused.
			refused = true
			return revokeFamily(ctx, tx, family, now)
		}
		if err != nil {
			return fmt.Errorf("load membership: %w", err)
		}
		if _, err := tx.Exec(ctx, `UPDATE central.refresh_tokens SET used_at = $2 WHERE id = $1`, id, now); err != nil {
			return fmt.Errorf("mark refresh token used: %w", err)
		}
		return s.insertRefresh(ctx, tx, userID, orgID, family, nextHash, now)
	})
	if err != nil {
		return nil, fmt.Errorf("refresh: %w", err)
	}
	if refused {
		return nil, errBadRefresh()
	}
	return s.session(userID, orgID, role, next)
}

func revokeFamily(ctx context.Context, tx pgx.Tx, family string, now time.Time) error {
	if _, err := tx.Exec(ctx, `UPDATE central.refresh_tokens SET revoked_at = $2
		WHERE family_id = $1::uuid AND revoked_at IS NULL`, family, now); err != nil {
		return fmt.Errorf("revoke refresh token family: %w", err)
	}
	return nil
}

// Logout ends sessions of the signed-in user: with a refresh token, that
// token's family (if it is the caller's); without one, every session of the
// caller in the organization. Access tokens already issued stay valid until
// they expire (at most 15 minutes).
func (s *Service) Logout(ctx context.Context, p Principal, refresh string) error {
	now := clock.Stamp(s.cfg.Clock.Now())
	var err error
	if refresh == "" {
		_, err = s.pool.Exec(ctx, `UPDATE central.refresh_tokens SET revoked_at = $3
			WHERE user_id = $1 AND organization_id = $2 AND revoked_at IS NULL`, p.UserID, p.OrgID, now)
	} else {
		if !token.ValidRefresh(refresh) {
			return nil
		}
		_, err = s.pool.Exec(ctx, `UPDATE central.refresh_tokens SET revoked_at = $4
			WHERE revoked_at IS NULL AND family_id = (
			    SELECT family_id FROM central.refresh_tokens
			    WHERE token_hash = $1 AND user_id = $2 AND organization_id = $3)`,
			token.HashRefresh(refresh), p.UserID, p.OrgID, now)
	}
	if err != nil {
		return fmt.Errorf("logout: %w", err)
	}
	return nil
}

// Me returns the signed-in user, the organization, the role and the
// subscription.
func (s *Service) Me(ctx context.Context, p Principal) (*Me, error) {
	var m Me
	u, o := &m.User, &m.Organization
	err := s.pool.QueryRow(ctx, `
		SELECT u.id, u.name, u.email, u.created_at, mb.role,
		       o.id, o.name, o.subscription_status, o.default_daily_limit, o.created_at
		FROM central.memberships mb
		JOIN central.users u ON u.id = mb.user_id
		JOIN central.organizations o ON o.id = mb.organization_id
		WHERE mb.organization_id = $1 AND mb.user_id = $2`, p.OrgID, p.UserID,
	).Scan(&u.ID, &u.Name, &u.Email, &u.CreatedAt, &u.Role, &o.ID, &o.Name, &o.SubscriptionStatus, &o.DefaultDailyLimit, &o.CreatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, ErrInvalidToken()
	}
	if err != nil {
		return nil, fmt.Errorf("me: %w", err)
	}
	u.CreatedAt, o.CreatedAt = clock.Stamp(u.CreatedAt), clock.Stamp(o.CreatedAt)
	o.Tenant = p.Tenant
	m.Role = u.Role
	m.Subscription = o.Subscription()
	return &m, nil
}
