package accesspages

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/bizmsg/platform/platform/apikey"
	"github.com/bizmsg/platform/platform/keys"
	"github.com/bizmsg/platform/platform/page"
	"github.com/bizmsg/platform/web"
)

// keyView is an API key as the keys page shows it.
type keyView struct {
	keys.Resource
	// CanReveal: "Show key" is offered (encrypted copy, active key, admin).
	CanReveal bool
	// CanRevoke: the key is active and the user may revoke it.
	CanRevoke bool
}

// keysData is the keys page's data.
type keysData struct {
	Keys   []keyView
	Scopes []web.CheckItem
	// Encrypted: keys are stored encrypted too, so they can be shown again.
	Encrypted bool
	// More: the organization has more keys than the page shows.
	More bool
}

// scopeText returns what a scope allows (docs/api.md, §Tenant API endpoints
// and scopes).
func scopeText(s string) string {
	switch s {
	case apikey.ScopeAll:
		return "All permissions"
	case apikey.ScopeMessagesSend:
		return "Send messages and add sender numbers"
	case apikey.ScopeMessagesRead:
		return "Read message history"
	case apikey.ScopeContactsLookup:
		return "Check whether a number can receive messages"
	case apikey.ScopeUsageRead:
		return "Read usage statistics and account limits"
	case apikey.ScopeWebhooksManage:
		return "Manage webhook endpoints and their deliveries"
	case apikey.ScopeCampaignsManage:
		return "Create and run campaigns"
	}
	return s
}

// maxKeysShown bounds the keys page (the newest first).
const maxKeysShown = 100

// keysPage lists the organization's keys and, for owners and admins, the
// creation form.
func (d *Pages) keysPage(c *gin.Context) {
	d.renderKeys(c, http.StatusOK, web.PageData{Notice: web.Notice(c)}, nil)
}

func (d *Pages) renderKeys(c *gin.Context, status int, data web.PageData, checked []string) {
	s := web.SessionOf(c)
	list, next, err := d.cfg.Keys.List(c.Request.Context(), s.Principal.OrgID, page.Query{Limit: maxKeysShown})
	if err != nil {
		d.Internal(c, err)
		return
	}
	now := d.cfg.Keys.Now()
	out := keysData{Encrypted: d.cfg.Keys.CanReveal(), More: next != ""}
	for _, k := range list {
		r := k.Resource(now)
		active := r.Status == keys.StatusActive
		out.Keys = append(out.Keys, keyView{
			Resource:  r,
			CanReveal: active && k.Sealed && out.Encrypted && s.IsAdmin(),
			CanRevoke: active && s.IsAdmin(),
		})
	}
	out.Scopes = web.CheckItems(apikey.Scopes(), scopeText, checked)
	data.Title, data.Nav, data.Data = "API keys", "keys", out
	if data.Form == nil {
		data.Form = map[string]string{"expires_in_days": "90"}
	}
	d.RenderStatus(c, status, "keys", data)
}

// keySecretData is the data of the page that shows a key's value.
type keySecretData struct {
	Key keys.Resource
	// Created: the key was just created; Encrypted: it can be shown again.
	Created, Encrypted bool
}

// createKey creates a key through the keys service and shows its value
// this once, in the response to the POST (never in a URL, never stored
// for a later page); the response is not cached.
func (d *Pages) createKey(c *gin.Context) {
	s := web.SessionOf(c)
	scopes := c.PostFormArray("scopes")
	if !s.IsAdmin() {
		d.Internal(c, web.ErrNotAdmin("create API keys"))
		return
	}
	// The form becomes the API's request body, so that it is validated by
	// the same rules (keys.CreateRequest.Spec).
	req := keys.CreateRequest{}
	req.Name, _ = json.Marshal(c.PostForm("name"))
	if len(scopes) > 0 {
		req.Scopes, _ = json.Marshal(scopes)
	}
	if days := strings.TrimSpace(c.PostForm("expires_in_days")); days != "" {
		// Checked as the API checks the raw JSON number: an integer 1..365.
		req.ExpiresInDays = json.RawMessage(days)
	}
	spec, err := req.Spec()
	if err == nil {
		var created *keys.Created
		created, err = d.cfg.Keys.Create(c.Request.Context(), s.Principal.OrgID, keys.Actor{UserID: s.Principal.UserID}, spec)
		if err == nil {
			d.Render(c, "key_secret", web.PageData{Title: "API key created", Nav: "keys",
				Data: keySecretData{Key: created.Resource(d.cfg.Keys.Now()), Created: true, Encrypted: created.Key.Sealed}})
			return
		}
	}
	pd := web.PageData{Form: map[string]string{
		"name": c.PostForm("name"), "expires_in_days": c.PostForm("expires_in_days"),
	}}
	if status, ok := d.FormStatus(c, err, &pd); ok {
		d.renderKeys(c, status, pd, scopes)
	}
}

// revealKey shows a key again from its encrypted copy ("Show key"); the
// keys service records the reveal in the audit log.
func (d *Pages) revealKey(c *gin.Context) {
	s, id, ok := d.AdminAction(c, "API key", "show API keys")
	if !ok {
		return
	}
	out, err := d.cfg.Keys.Reveal(c.Request.Context(), s.Principal.OrgID, s.Principal.UserID, id)
	if err != nil {
		d.Internal(c, err)
		return
	}
	d.Render(c, "key_secret", web.PageData{Title: "Show API key", Nav: "keys",
		Data: keySecretData{Key: out.Resource(d.cfg.Keys.Now())}})
}

// revokeKeyPage asks for confirmation before revoking.
func (d *Pages) revokeKeyPage(c *gin.Context) {
	s := web.SessionOf(c)
	id, ok := d.PathID(c, "API key")
	if !ok {
		return
	}
	k, err := d.cfg.Keys.Get(c.Request.Context(), s.Principal.OrgID, id)
	if err != nil {
		d.Internal(c, err)
		return
	}
	d.Render(c, "key_revoke", web.PageData{Title: "Revoke API key", Nav: "keys", Data: k.Resource(d.cfg.Keys.Now())})
}

// revokeKey revokes a key; it stops working at once on every node.
func (d *Pages) revokeKey(c *gin.Context) {
	s, id, ok := d.AdminAction(c, "API key", "revoke API keys")
	if !ok {
		return
	}
	if err := d.cfg.Keys.Revoke(c.Request.Context(), s.Principal.OrgID, keys.Actor{UserID: s.Principal.UserID}, id); err != nil {
		d.Internal(c, err)
		return
	}
	web.Redirect(c, "/keys?ok=key_revoked")
}
