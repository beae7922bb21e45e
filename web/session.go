package web

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/bizmsg/platform/platform/accounts"
	"github.com/bizmsg/platform/platform/db"
)

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
	if _, err := d.cfg.Pool.Exec(ctx, `
		WITH expired AS (
		    DELETE FROM central.web_sessions
		    WHERE user_id = $2 AND (expires_at <= $4 OR last_seen_at <= $5))
		INSERT INTO central.web_sessions (token_hash, user_id, organization_id, created_at, last_seen_at, expires_at)
		VALUES ($1, $2, $3, $4, $4, $6)`,
		hashToken(token), userID, orgID, now, now.Add(-d.cfg.IdleTimeout), now.Add(d.cfg.MaxAge)); err != nil {
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
func loadSession(ctx context.Context, pool *pgxpool.Pool, token string, now time.Time, idle time.Duration) (*Session, error) {
	if !validToken(token) {
		return nil, errNoSession
	}
	var (
		s      Session
		schema *string
	)
	p := &s.Principal
	err := pool.QueryRow(ctx, `
		SELECT s.id, s.user_id, s.organization_id, s.last_seen_at, m.role, o.schema_name, o.name,
		       o.default_daily_limit, u.name, u.email
		FROM central.web_sessions s
		JOIN central.memberships m ON m.organization_id = s.organization_id AND m.user_id = s.user_id
		JOIN central.organizations o ON o.id = s.organization_id
		JOIN central.users u ON u.id = s.user_id
		WHERE s.token_hash = $1 AND s.expires_at > $2 AND s.last_seen_at > $3`,
		hashToken(token), now, now.Add(-idle),
	).Scan(&s.ID, &p.UserID, &p.OrgID, &s.LastSeenAt, &p.Role, &schema, &s.OrgName,
		&s.DefaultDailyLimit, &s.UserName, &s.UserEmail)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, errNoSession
	}
	if err != nil {
		return nil, fmt.Errorf("load session: %w", err)
	}
	if p.Tenant, err = db.StoredTenant(p.OrgID, schema); err != nil {
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
	s, err := loadSession(c.Request.Context(), d.cfg.Pool, cookie, now, d.cfg.IdleTimeout)
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
		if _, err := d.cfg.Pool.Exec(c.Request.Context(),
			`UPDATE central.web_sessions SET last_seen_at = $2 WHERE id = $1`, s.ID, now); err != nil {
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
	if _, err := d.cfg.Pool.Exec(c.Request.Context(),
		`DELETE FROM central.web_sessions WHERE token_hash = $1`, hashToken(cookie)); err != nil {
		return fmt.Errorf("end session: %w", err)
	}
	return nil
}

// PurgeSessions deletes sessions that ended (idle for longer than idle, or
// past their absolute expiry) before now, for a housekeeping job; it returns
// how many it deleted.
func PurgeSessions(ctx context.Context, pool *pgxpool.Pool, now time.Time, idle time.Duration) (int64, error) {
	tag, err := pool.Exec(ctx, `DELETE FROM central.web_sessions WHERE expires_at <= $1 OR last_seen_at <= $2`,
		now, now.Add(-idle))
	if err != nil {
		return 0, fmt.Errorf("purge web sessions: %w", err)
	}
	return tag.RowsAffected(), nil
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
