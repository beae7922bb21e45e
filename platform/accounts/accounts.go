package accounts

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/mail"
	"strings"
	"time"
	"unicode"

	"github.com/uptrace/bun"

	"github.com/bizmsg/platform/platform/apperr"
	"github.com/bizmsg/platform/platform/clock"
	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/password"
	"github.com/bizmsg/platform/platform/sqlq"
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
	err = s.db.RunInTx(ctx, func(tx db.Tx) error {
		org := &out.Organization
		row := orgRow{Name: org.Name, SubscriptionStatus: org.SubscriptionStatus, DefaultDailyLimit: org.DefaultDailyLimit, CreatedAt: now}
		if _, err := tx.Bun.NewInsert().Model(&row).
			Column("name", "subscription_status", "default_daily_limit", "created_at").Returning("id").Exec(ctx); err != nil {
			return fmt.Errorf("insert organization: %w", err)
		}
		org.ID = row.ID
		org.Tenant = db.Tenant{OrgID: org.ID, Schema: db.SchemaFor(org.ID)}
		row.SchemaName = &org.Tenant.Schema
		if _, err := tx.Bun.NewUpdate().Model(&row).Column("schema_name").WherePK().Exec(ctx); err != nil {
			return fmt.Errorf("set schema name: %w", err)
		}
		if _, err := s.cfg.Migrator.TenantTx(ctx, tx.Pgx(), org.Tenant); err != nil {
			return fmt.Errorf("provision tenant schema: %w", err)
		}
		if err := insertMember(ctx, tx.Bun, org.ID, &out.User, hash); err != nil {
			return err
		}
		return s.insertRefresh(ctx, tx.Bun, out.User.ID, org.ID, "", refreshHash, now)
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
func insertMember(ctx context.Context, tx bun.Tx, orgID int64, u *User, hash string) error {
	row := userRow{Email: u.Email, Name: u.Name, PasswordHash: hash, CreatedAt: u.CreatedAt}
	_, err := tx.NewInsert().Model(&row).Column("email", "name", "password_hash", "created_at").Returning("id").Exec(ctx)
	if db.IsUniqueViolation(err, "users_email_key") {
		return errEmailTaken()
	}
	if err != nil {
		return fmt.Errorf("insert user: %w", err)
	}
	u.ID = row.ID
	m := membershipRow{OrganizationID: orgID, UserID: u.ID, Role: u.Role, CreatedAt: u.CreatedAt}
	if _, err := tx.NewInsert().Model(&m).Exec(ctx); err != nil {
		return fmt.Errorf("insert membership: %w", err)
	}
	return nil
}

// insertRefresh stores a refresh token's hash, in family (a new family when
// family is "").
func (s *Service) insertRefresh(ctx context.Context, idb bun.IDB, userID, orgID int64, family string, hash []byte, now time.Time) error {
	_, err := s.q.Raw(idb, "insert_refresh", sqlq.Args{
		"user_id": userID, "org_id": orgID, "family": family, "hash": hash,
		"expires_at": now.Add(s.cfg.RefreshTTL), "now": now,
	}).Exec(ctx)
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
	var acct struct {
		UserID         int64  `bun:"user_id"`
		PasswordHash   string `bun:"password_hash"`
		OrganizationID int64  `bun:"organization_id"`
		Role           string `bun:"role"`
	}
	err = s.q.Raw(s.db.Bun, "login_account", sqlq.Args{"email": email}).Scan(ctx, &acct)
	userID, hash, orgID, role := acct.UserID, acct.PasswordHash, acct.OrganizationID, acct.Role
	if errors.Is(err, sql.ErrNoRows) {
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
		_, err = s.db.Bun.NewUpdate().Model(&userRow{ID: userID, PasswordHash: h}).Column("password_hash").WherePK().Exec(ctx)
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
	if err := s.insertRefresh(ctx, s.db.Bun, userID, orgID, "", refreshHash, now); err != nil {
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
	err = s.db.Bun.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		var rt refreshRow
		err := tx.NewSelect().Model(&rt).Where("token_hash = ?", token.HashRefresh(plain)).For("UPDATE").Scan(ctx)
		if errors.Is(err, sql.ErrNoRows) {
			refused = true
			return nil
		}
		if err != nil {
			return fmt.Errorf("load refresh token: %w", err)
		}
		userID, orgID = rt.UserID, rt.OrganizationID
		if rt.RevokedAt != nil || !now.Before(rt.ExpiresAt) {
			refused = true
			return nil
		}
		role, err = memberRole(ctx, tx, orgID, userID)
		if rt.UsedAt != nil || errors.Is(err, sql.ErrNoRows) {
			// Reuse of a rotated token, or a user no longer in the
			// organization: end the whole family. Committed, then refused.
			refused = true
			return revokeFamily(ctx, tx, rt.FamilyID, now)
		}
		if err != nil {
			return fmt.Errorf("load membership: %w", err)
		}
		rt.UsedAt = &now
		if _, err := tx.NewUpdate().Model(&rt).Column("used_at").WherePK().Exec(ctx); err != nil {
			return fmt.Errorf("mark refresh token used: %w", err)
		}
		return s.insertRefresh(ctx, tx, userID, orgID, rt.FamilyID, nextHash, now)
	})
	if err != nil {
		return nil, fmt.Errorf("refresh: %w", err)
	}
	if refused {
		return nil, errBadRefresh()
	}
	return s.session(userID, orgID, role, next)
}

// memberRole reads the role of user userID in organization orgID
// (sql.ErrNoRows: not a member).
func memberRole(ctx context.Context, idb bun.IDB, orgID, userID int64) (string, error) {
	m := membershipRow{OrganizationID: orgID, UserID: userID}
	err := idb.NewSelect().Model(&m).Column("role").WherePK().Scan(ctx)
	return m.Role, err
}

func revokeFamily(ctx context.Context, tx bun.Tx, family string, now time.Time) error {
	if _, err := tx.NewUpdate().Model((*refreshRow)(nil)).Set("revoked_at = ?", now).
		Where("family_id = ?::uuid", family).Where("revoked_at IS NULL").Exec(ctx); err != nil {
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
		_, err = s.db.Bun.NewUpdate().Model((*refreshRow)(nil)).Set("revoked_at = ?", now).
			Where("user_id = ?", p.UserID).Where("organization_id = ?", p.OrgID).Where("revoked_at IS NULL").Exec(ctx)
	} else {
		if !token.ValidRefresh(refresh) {
			return nil
		}
		_, err = s.q.Raw(s.db.Bun, "revoke_presented_family", sqlq.Args{
			"hash": token.HashRefresh(refresh), "user_id": p.UserID, "org_id": p.OrgID, "now": now,
		}).Exec(ctx)
	}
	if err != nil {
		return fmt.Errorf("logout: %w", err)
	}
	return nil
}

// Me returns the signed-in user, the organization, the role and the
// subscription.
func (s *Service) Me(ctx context.Context, p Principal) (*Me, error) {
	var row struct {
		UserID             int64     `bun:"user_id"`
		UserName           string    `bun:"user_name"`
		Email              string    `bun:"email"`
		UserCreatedAt      time.Time `bun:"user_created_at"`
		Role               string    `bun:"role"`
		OrgID              int64     `bun:"org_id"`
		OrgName            string    `bun:"org_name"`
		SubscriptionStatus string    `bun:"subscription_status"`
		DefaultDailyLimit  int       `bun:"default_daily_limit"`
		OrgCreatedAt       time.Time `bun:"org_created_at"`
	}
	err := s.q.Raw(s.db.Bun, "me", sqlq.Args{"org_id": p.OrgID, "user_id": p.UserID}).Scan(ctx, &row)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ErrInvalidToken()
	}
	if err != nil {
		return nil, fmt.Errorf("me: %w", err)
	}
	var m Me
	u, o := &m.User, &m.Organization
	*u = User{ID: row.UserID, Name: row.UserName, Email: row.Email, Role: row.Role, CreatedAt: row.UserCreatedAt}
	*o = Organization{ID: row.OrgID, Name: row.OrgName, SubscriptionStatus: row.SubscriptionStatus,
		DefaultDailyLimit: row.DefaultDailyLimit, CreatedAt: row.OrgCreatedAt}
	u.CreatedAt, o.CreatedAt = clock.Stamp(u.CreatedAt), clock.Stamp(o.CreatedAt)
	o.Tenant = p.Tenant
	m.Role = u.Role
	m.Subscription = o.Subscription()
	return &m, nil
}
