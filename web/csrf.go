package web

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"net/url"

	"github.com/gin-gonic/gin"
)

// CSRFField is the name of the hidden form field holding the CSRF token.
const CSRFField = "csrf_token"

// Purposes of CSRF tokens: a session's forms, or the signed-out forms keyed
// by the pre-session cookie. A token of one purpose is not valid for the
// other.
const (
	purposeSession    = "session"
	purposePreSession = "presession"
)

// csrfToken derives the CSRF token of a secret (a session or pre-session
// token) for a purpose: an HMAC under a key derived from the configured
// secret. It reveals nothing of the secret, and an attacker who cannot read
// the victim's cookie cannot compute it.
func (d *Dashboard) csrfToken(purpose, secret string) string {
	m := hmac.New(sha256.New, d.csrfKey)
	m.Write([]byte(purpose))
	m.Write([]byte{0})
	m.Write([]byte(secret))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// validCSRF compares a submitted token with the expected one in constant
// time.
func validCSRF(got, want string) bool {
	return got != "" && hmac.Equal([]byte(got), []byte(want))
}

// requireCSRF refuses a POST whose csrf_token is not the session's (mounted
// after requireSession). Other methods pass.
func (d *Dashboard) requireCSRF(c *gin.Context) {
	if c.Request.Method != http.MethodPost {
		c.Next()
		return
	}
	if !validCSRF(c.PostForm(CSRFField), session(c).CSRF) {
		d.csrfRefused(c)
		return
	}
	c.Next()
}

// preSessionToken returns the CSRF token of the sign-up and log-in forms,
// setting a new pre-session cookie when the request has no valid one.
func (d *Dashboard) preSessionToken(c *gin.Context) (string, error) {
	cookie, _ := c.Cookie(PreSessionCookie)
	if !validToken(cookie) {
		var err error
		if cookie, err = newToken(); err != nil {
			return "", err
		}
		d.setCookie(c, PreSessionCookie, cookie, d.cfg.MaxAge)
	}
	return d.csrfToken(purposePreSession, cookie), nil
}

// requirePreCSRF refuses a sign-up or log-in POST whose csrf_token does not
// match the pre-session cookie (signed double submit).
func (d *Dashboard) requirePreCSRF(c *gin.Context) {
	cookie, _ := c.Cookie(PreSessionCookie)
	if !validToken(cookie) || !validCSRF(c.PostForm(CSRFField), d.csrfToken(purposePreSession, cookie)) {
		d.csrfRefused(c)
		return
	}
	c.Next()
}

// checkOrigin refuses state-changing requests that a browser says come from
// another site (Origin or Sec-Fetch-Site), before any CSRF token is looked
// at: defence in depth for browsers that send these headers.
func (d *Dashboard) checkOrigin(c *gin.Context) {
	switch c.Request.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		c.Next()
		return
	}
	if c.GetHeader("Sec-Fetch-Site") == "cross-site" {
		d.csrfRefused(c)
		return
	}
	// "null" (an opaque origin, e.g. under a no-referrer policy a browser
	// extension imposes) says nothing: the CSRF token decides.
	if origin := c.GetHeader("Origin"); origin != "" && origin != "null" {
		u, err := url.Parse(origin)
		if err != nil || u.Host != c.Request.Host {
			d.csrfRefused(c)
			return
		}
	}
	c.Next()
}

// csrfRefused answers 403 with a page that says what to do.
func (d *Dashboard) csrfRefused(c *gin.Context) {
	d.renderStatus(c, http.StatusForbidden, "error", pageData{
		Title: "Form expired",
		Message: "This form could not be accepted: it was not sent from this dashboard's page, or the page is too old. " +
			"Go back, reload the page and try again.",
	})
	c.Abort()
}
