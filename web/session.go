package web

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"embed"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/uptrace/bun"

	"github.com/bizmsg/platform/platform/accounts"
	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/sqlq"
)

// queries are the package's named queries (platform/sqlq).
//
//go:embed queries/*.sql
var queries embed.FS

// sessionRow is the bun model of central.web_sessions, for the
// statements of one table (touch, logout, purge).
type sessionRow struct {
	bun.BaseModel `bun:"table:central.web_sessions,alias:ws"`

	ID         int64     `bun:"id,pk"`
	LastSeenAt time.Time `bun:"last_seen_at"`
}

// liveSession is a row of the load_session query.
type liveSession struct {
	ID                int64     `bun:"id"`
	UserID            int64     `bun:"user_id"`
	OrganizationID    int64     `bun:"organization_id"`
	LastSeenAt        time.Time `bun:"last_seen_at"`
	Role              string    `bun:"role"`
	SchemaName        *string   `bun:"schema_name"`
	OrgName           string    `bun:"org_name"`
	DefaultDailyLimit int       `bun:"default_daily_limit"`
	UserName          string    `bun:"user_name"`
	UserEmail         string    `bun:"user_email"`
}

// Cookie names. The session cookie holds the session token; the pre-session
// cookie only keys the CSRF token of the sign-up and log-in forms.
const (
	SessionCookie    = "bizmsg_session"
	PreSessionCookie = "bizmsg_presession"
)

// tokenBytes is the entropy of session and pre-session tokens.
const tokenBytes = 32

// sessionKey is the gin context key of the request's *Session.
const sessionKey = "web.session"

// Session is a signed-in dashboard user: who, in which organization, with
// the role the membership has now.
type Session struct {
	ID        int64
	Principal accounts.Principal
	UserName  string
	UserEmail string
	OrgName   string
	// DefaultDailyLimit is the organization's per-sender default.
	DefaultDailyLimit int
	// CSRF is the token every form of this session carries.
	CSRF       string
	LastSeenAt time.Time
}

// IsAdmin reports whether the user may change the organization.
func (s *Session) IsAdmin() bool { return s.Principal.IsAdmin() }

// newToken returns a random URL-safe token of tokenBytes bytes.
func newToken() (string, error) {
	b := make([]byte, tokenBytes)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("session token: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// validToken reports whether s has the shape newToken gives, so that junk
// from a cookie never reaches the database.
func validToken(s string) bool {
	if len(s) != base64.RawURLEncoding.EncodedLen(tokenBytes) {
		return false
	}
	_, err := base64.RawURLEncoding.DecodeString(s)
	return err == nil
}

// hashToken is what the database stores of a session token.
func hashToken(token string) []byte {
	sum := sha256.Sum256([]byte(token))
	return sum[:]
}

// deriveKey derives a purpose-bound key from the configured secret.
func deriveKey(secret []byte, purpose string) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(purpose))
	return m.Sum(nil)
}

// startSession stores a new session of user userID in organization orgID
// and sets its cookie. Expired sessions of the user are deleted on the way.
func (d *Dashboard) startSession(c *gin.Context, userID, orgID int64) error {
	ctx := c.Request.Context()
	token, err := newToken()
	if err != nil {
		return err
	}
	now := d.clock.Now()
	if _, err := d.q.Raw(d.cfg.DB.Bun, "start_session", sqlq.Args{"token_hash": hashToken(token), "user_id": userID,
		"org_id": orgID, "now": now, "idle_since": now.Add(-d.cfg.IdleTimeout),
		"expires_at": now.Add(d.cfg.MaxAge)}).Exec(ctx); err != nil {
		return fmt.Errorf("start session: %w", err)
	}
	d.setCookie(c, SessionCookie, token, d.cfg.MaxAge)
	return nil
}

// errNoSession means the request has no live session.
var errNoSession = errors.New("web: no session")

// loadSession finds the live session of token: not idle for longer than
// IdleTimeout, not past its absolute expiry, and its user still a member of
// its organization (the role is the membership's current one).
func (d *Dashboard) loadSession(ctx context.Context, token string, now time.Time) (*Session, error) {
	if !validToken(token) {
		return nil, errNoSession
	}
	var r liveSession
	err := d.q.Raw(d.cfg.DB.Bun, "load_session", sqlq.Args{"token_hash": hashToken(token), "now": now,
		"idle_since": now.Add(-d.cfg.IdleTimeout)}).Scan(ctx, &r)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, errNoSession
	}
	if err != nil {
		return nil, fmt.Errorf("load session: %w", err)
	}
	s := Session{
		ID:                r.ID,
		Principal:         accounts.Principal{UserID: r.UserID, OrgID: r.OrganizationID, Role: r.Role},
		UserName:          r.UserName,
		UserEmail:         r.UserEmail,
		OrgName:           r.OrgName,
		DefaultDailyLimit: r.DefaultDailyLimit,
		LastSeenAt:        r.LastSeenAt,
	}
	if s.Principal.Tenant, err = db.StoredTenant(r.OrganizationID, r.SchemaName); err != nil {
		return nil, fmt.Errorf("load session: %w", err)
	}
	return &s, nil
}

// requireSession admits requests with a live session: it stores the
// *Session for the handlers and refreshes last_seen_at (at most once per
// TouchInterval). Without one, a GET is sent to the log-in page and
// anything else refused with 401; the cookie of a dead session is cleared.
func (d *Dashboard) requireSession(c *gin.Context) {
	cookie, _ := c.Cookie(SessionCookie)
	now := d.clock.Now()
	s, err := d.loadSession(c.Request.Context(), cookie, now)
	if errors.Is(err, errNoSession) {
		if cookie != "" {
			d.clearCookie(c, SessionCookie)
		}
		if c.Request.Method == http.MethodGet {
			c.Redirect(http.StatusSeeOther, "/login")
		} else {
			d.renderStatus(c, http.StatusUnauthorized, "error", pageData{
				Title:   "Signed out",
				Message: "Your session has ended. Log in again and repeat the action.",
			})
		}
		c.Abort()
		return
	}
	if err != nil {
		d.internal(c, err)
		c.Abort()
		return
	}
	if now.Sub(s.LastSeenAt) >= d.cfg.TouchInterval {
		if _, err := d.cfg.DB.Bun.NewUpdate().Model(&sessionRow{ID: s.ID, LastSeenAt: now}).Column("last_seen_at").
			WherePK().Exec(c.Request.Context()); err != nil {
			d.log.WarnContext(c.Request.Context(), "web session touch failed", "error", err)
		}
	}
	s.CSRF = d.csrfToken(purposeSession, cookie)
	c.Set(sessionKey, s)
	c.Next()
}

// session returns the request's session (set by requireSession).
func session(c *gin.Context) *Session {
	s, _ := c.MustGet(sessionKey).(*Session)
	return s
}

// endSession deletes the session of the request's cookie, if any, and
// clears the cookie.
func (d *Dashboard) endSession(c *gin.Context) error {
	cookie, _ := c.Cookie(SessionCookie)
	d.clearCookie(c, SessionCookie)
	if !validToken(cookie) {
		return nil
	}
	if _, err := d.cfg.DB.Bun.NewDelete().Model((*sessionRow)(nil)).Where("ws.token_hash = ?", hashToken(cookie)).
		Exec(c.Request.Context()); err != nil {
		return fmt.Errorf("end session: %w", err)
	}
	return nil
}

// PurgeSessions deletes sessions that ended (idle for longer than idle, or
// past their absolute expiry) before now, for a housekeeping job; it returns
// how many it deleted.
func PurgeSessions(ctx context.Context, idb bun.IDB, now time.Time, idle time.Duration) (int64, error) {
	res, err := idb.NewDelete().Model((*sessionRow)(nil)).Where("ws.expires_at <= ?", now).
		WhereOr("ws.last_seen_at <= ?", now.Add(-idle)).Exec(ctx)
	if err != nil {
		return 0, fmt.Errorf("purge web sessions: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("purge web sessions: %w", err)
	}
	return n, nil
}

// secure reports whether cookies of this request get the Secure attribute.
func (d *Dashboard) secure(c *gin.Context) bool {
	return d.cfg.SecureCookies || c.Request.TLS != nil ||
		strings.EqualFold(c.GetHeader("X-Forwarded-Proto"), "https")
}

// setCookie sets an HttpOnly, SameSite=Lax, host-only cookie for the whole
// site.
func (d *Dashboard) setCookie(c *gin.Context, name, value string, maxAge time.Duration) {
	http.SetCookie(c.Writer, &http.Cookie{ //nolint:gosec // G124: Secure is set per request by d.secure(c)
		Name:     name,
		Value:    value,
		Path:     "/",
		MaxAge:   int(maxAge / time.Second),
		HttpOnly: true,
		Secure:   d.secure(c),
		SameSite: http.SameSiteLaxMode,
	})
}

// clearCookie tells the browser to drop a cookie.
func (d *Dashboard) clearCookie(c *gin.Context, name string) {
	http.SetCookie(c.Writer, &http.Cookie{ //nolint:gosec // G124: Secure is set per request by d.secure(c)
		Name:     name,
		Value:    "",
		Path:     "/",
		MaxAge:   -1,
		HttpOnly: true,
		Secure:   d.secure(c),
		SameSite: http.SameSiteLaxMode,
	})
}
