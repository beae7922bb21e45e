package accesspages

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/bizmsg/platform/platform/accounts"
	"github.com/bizmsg/platform/platform/apperr"
	"github.com/bizmsg/platform/platform/page"
	"github.com/bizmsg/platform/web"
)

// membersData is the members page's data.
type membersData struct {
	Members []accounts.User
	// Roles are the roles the user may give.
	Roles []string
	More  bool
	// viewer is the signed-in user's role, and owners the organization's
	// number of owners, for Removable.
	viewer string
	owners int
}

// Removable reports whether the signed-in user may remove u, so that the
// page offers "Remove" only where accounts.Service.RemoveMember would
// succeed: owners and admins remove members and admins; only owners remove
// owners, and never the last one (422 last_owner).
func (m membersData) Removable(u accounts.User) bool {
	switch {
	case m.viewer != accounts.RoleOwner && m.viewer != accounts.RoleAdmin:
		return false
	case u.Role != accounts.RoleOwner:
		return true
	default:
		return m.viewer == accounts.RoleOwner && m.owners > 1
	}
}

// maxMembersShown bounds the members page (the newest first).
const maxMembersShown = 100

// membersPage lists the organization's members and, for owners and
// admins, the form that adds one.
func (d *Pages) membersPage(c *gin.Context) {
	d.renderMembers(c, http.StatusOK, web.PageData{Notice: web.Notice(c)})
}

func (d *Pages) renderMembers(c *gin.Context, status int, data web.PageData) {
	s := web.SessionOf(c)
	ctx := c.Request.Context()
	list, next, err := d.cfg.Accounts.Members(ctx, s.Principal.OrgID, page.Query{Limit: maxMembersShown})
	if err != nil {
		d.Internal(c, err)
		return
	}
	owners, err := d.cfg.Accounts.Owners(ctx, s.Principal.OrgID)
	if err != nil {
		d.Internal(c, err)
		return
	}
	roles := []string{accounts.RoleMember, accounts.RoleAdmin}
	if s.Principal.Role == accounts.RoleOwner {
		roles = append(roles, accounts.RoleOwner)
	}
	if data.Form == nil {
		data.Form = map[string]string{"role": accounts.RoleMember}
	}
	data.Title, data.Nav, data.Data = "Members", "members", membersData{Members: list, Roles: roles, More: next != "",
		viewer: s.Principal.Role, owners: owners}
	d.RenderStatus(c, status, "members", data)
}

// addMember adds a member with a role and an initial password (the Central
// API's model of an invitation); the service enforces who may add whom.
func (d *Pages) addMember(c *gin.Context) {
	s := web.SessionOf(c)
	m := accounts.NewMember{
		Name:     c.PostForm("name"),
		Email:    c.PostForm("email"),
		Role:     c.PostForm("role"),
		Password: c.PostForm("password"),
	}
	if _, err := d.cfg.Accounts.AddMember(c.Request.Context(), s.Principal, m); err != nil {
		pd := web.PageData{Form: map[string]string{"name": m.Name, "email": m.Email, "role": m.Role}}
		if status, ok := d.FormStatus(c, err, &pd); ok {
			d.renderMembers(c, status, pd)
		}
		return
	}
	web.Redirect(c, "/members?ok=member_added")
}

// member finds member :id for the confirmation page.
func (d *Pages) member(c *gin.Context) (*accounts.User, bool) {
	s := web.SessionOf(c)
	id, ok := d.PathID(c, "member")
	if !ok {
		return nil, false
	}
	u, err := d.cfg.Keys.Member(c.Request.Context(), s.Principal.OrgID, id)
	if err == nil && u == nil {
		err = apperr.NotFound("member")
	}
	if err != nil {
		d.Internal(c, err)
		return nil, false
	}
	return u, true
}

// removeMemberPage asks for confirmation before removing a member.
func (d *Pages) removeMemberPage(c *gin.Context) {
	u, ok := d.member(c)
	if !ok {
		return
	}
	d.Render(c, "member_remove", web.PageData{Title: "Remove member", Nav: "members", Data: u})
}

// removeMember removes a member (their account and sessions go with it).
// Removing oneself ends one's own session too.
func (d *Pages) removeMember(c *gin.Context) {
	s := web.SessionOf(c)
	id, ok := d.PathID(c, "member")
	if !ok {
		return
	}
	if err := d.cfg.Accounts.RemoveMember(c.Request.Context(), s.Principal, id); err != nil {
		status, msg, _, ok := web.FormError(err)
		if !ok || status == http.StatusNotFound {
			d.Internal(c, err)
			return
		}
		d.renderMembers(c, status, web.PageData{Error: msg})
		return
	}
	if id == s.Principal.UserID {
		d.ClearCookie(c, web.SessionCookie)
		web.Redirect(c, "/login")
		return
	}
	web.Redirect(c, "/members?ok=member_removed")
}
