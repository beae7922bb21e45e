package web

import (
	"net/http"

	"github.com/bizmsg/platform/platform/accounts"
	"github.com/gin-gonic/gin"
)

// signedIn reports whether the request already has a live session.
func (d *Dashboard) signedIn(c *gin.Context) bool {
	cookie, _ := c.Cookie(SessionCookie)
	if cookie == "" {
		return false
	}
	s, err := d.loadSession(c.Request.Context(), cookie, d.clock.Now())
	return err == nil && s != nil
}

// signedOutPage renders the sign-up or log-in page with a fresh
// pre-session CSRF token.
func (d *Dashboard) signedOutPage(c *gin.Context, status int, name string, data pageData) {
	token, err := d.preSessionToken(c)
	if err != nil {
		d.internal(c, err)
		return
	}
	data.CSRF = token
	d.renderStatus(c, status, name, data)
}

func (d *Dashboard) signupPage(c *gin.Context) {
	if d.signedIn(c) {
		redirect(c, "/")
		return
	}
	d.signedOutPage(c, http.StatusOK, "signup", pageData{Title: "Create your organization"})
}

// signup registers an organization and its owner through the Central
// API's service and signs the owner in.
func (d *Dashboard) signup(c *gin.Context) {
	reg := accounts.Registration{
		OrganizationName: c.PostForm("organization_name"),
		Name:             c.PostForm("name"),
		Email:            c.PostForm("email"),
		Password:         c.PostForm("password"),
	}
	out, err := d.cfg.Accounts.Register(c.Request.Context(), reg)
	if err != nil {
		pd := pageData{
			Title: "Create your organization",
			Form:  map[string]string{"organization_name": reg.OrganizationName, "name": reg.Name, "email": reg.Email},
		}
		if status, ok := d.formStatus(c, err, &pd); ok {
			d.signedOutPage(c, status, "signup", pd)
		}
		return
	}
	// The dashboard keeps its own session: the API refresh token that
	// registration hands out is revoked at once.
	p := accounts.Principal{UserID: out.User.ID, OrgID: out.Organization.ID}
	if err := d.cfg.Accounts.Logout(c.Request.Context(), p, out.RefreshToken); err != nil {
		d.log.WarnContext(c.Request.Context(), "web: revoke registration refresh token", "error", err)
	}
	if err := d.switchSession(c, out.User.ID, out.Organization.ID); err != nil {
		d.internal(c, err)
		return
	}
	redirect(c, "/?ok=welcome")
}

func (d *Dashboard) loginPage(c *gin.Context) {
	if d.signedIn(c) {
		redirect(c, "/")
		return
	}
	d.signedOutPage(c, http.StatusOK, "login", pageData{Title: "Log in", Notice: notice(c)})
}

// login checks the credentials with the Central API's login (the same
// password check and login throttle) and starts a dashboard session.
func (d *Dashboard) login(c *gin.Context) {
	ctx := c.Request.Context()
	email := c.PostForm("email")
	sess, err := d.cfg.Accounts.Login(ctx, accounts.Credentials{Email: email, Password: c.PostForm("password")}, c.ClientIP())
	if err != nil {
		pd := pageData{Title: "Log in", Form: map[string]string{"email": email}}
		if status, ok := d.formStatus(c, err, &pd); ok {
			d.signedOutPage(c, status, "login", pd)
		}
		return
	}
	p, err := d.cfg.Accounts.Authenticate(ctx, sess.AccessToken)
	if err != nil {
		d.internal(c, err)
		return
	}
	if err := d.cfg.Accounts.Logout(ctx, *p, sess.RefreshToken); err != nil {
		d.log.WarnContext(ctx, "web: revoke login refresh token", "error", err)
	}
	if err := d.switchSession(c, p.UserID, p.OrgID); err != nil {
		d.internal(c, err)
		return
	}
	redirect(c, "/")
}

// switchSession ends the request's current session, if any, and starts a
// new one: a session token is never reused across sign-ins.
func (d *Dashboard) switchSession(c *gin.Context, userID, orgID int64) error {
	if err := d.endSession(c); err != nil {
		return err
	}
	d.clearCookie(c, PreSessionCookie)
	return d.startSession(c, userID, orgID)
}

// logout deletes the session: the old cookie opens nothing afterwards.
func (d *Dashboard) logout(c *gin.Context) {
	if err := d.endSession(c); err != nil {
		d.internal(c, err)
		return
	}
	redirect(c, "/login?ok=signed_out")
}
