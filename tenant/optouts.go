package tenant

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/bizmsg/platform/platform/apikey"
	"github.com/bizmsg/platform/platform/consent"
	"github.com/bizmsg/platform/platform/httpx"
	"github.com/bizmsg/platform/platform/phone"
)

// optOutHandlers serves the Tenant API's opt-out routes.
type optOutHandlers struct {
	svc *consent.Service
}

// MountOptOuts registers the opt-out routes on g, the authenticated group
// Mount returns, each behind the contacts.manage scope (docs/api.md,
// §Opt-outs):
//
//	GET    /opt-outs[?phone=&source=&limit=&cursor=]  200 {"data": [...], "next_cursor": ...}
//	POST   /opt-outs {phone, note?}                    201 {"data": entry}; 200 if already opted out
//	DELETE /opt-outs/{phone}                           204; 404 if not opted out
//	GET    /opt-outs/settings                          200 {"data": settings}
//	PUT    /opt-outs/settings {opt_out_reply, opt_in_reply}  200 {"data": settings}
func MountOptOuts(g gin.IRoutes, svc *consent.Service) {
	h := &optOutHandlers{svc: svc}
	scope := RequireScope(apikey.ScopeContactsManage)
	g.GET("/opt-outs", scope, h.list)
	g.POST("/opt-outs", scope, h.add)
	g.GET("/opt-outs/settings", scope, h.settings)
	g.PUT("/opt-outs/settings", scope, h.putSettings)
	g.DELETE("/opt-outs/:phone", scope, h.remove)
}

// actor is the calling key as the consent service records it.
func actor(c *gin.Context) consent.Actor {
	p := MustPrincipal(c)
	return consent.Actor{UserID: p.UserID, KeyID: p.KeyID}
}

// list is GET /opt-outs: the list, newest first.
func (h *optOutHandlers) list(c *gin.Context) {
	page, err := h.svc.List(c.Request.Context(), MustPrincipal(c).Tenant, consent.ListQuery{
		Phone: phone.FromQuery(c.Query("phone")), Source: c.Query("source"),
		Limit: c.Query("limit"), Cursor: c.Query("cursor"),
	})
	httpx.Reply(c, http.StatusOK, page, err)
}

// add is POST /opt-outs: 201 with the new entry, 200 with the existing one.
func (h *optOutHandlers) add(c *gin.Context) {
	var in struct {
		Phone string `json:"phone"`
		Note  string `json:"note"`
	}
	if !httpx.Bind(c, &in) {
		return
	}
	e, added, err := h.svc.Add(c.Request.Context(), MustPrincipal(c).Tenant, actor(c),
		consent.AddRequest{Phone: in.Phone, Note: in.Note, Source: consent.SourceAPI})
	status := http.StatusOK
	if added {
		status = http.StatusCreated
	}
	httpx.Data(c, status, e, err)
}

// remove is DELETE /opt-outs/{phone}: the phone opts back in.
func (h *optOutHandlers) remove(c *gin.Context) {
	err := h.svc.Remove(c.Request.Context(), MustPrincipal(c).Tenant, actor(c), c.Param("phone"), consent.SourceAPI)
	httpx.Reply(c, http.StatusNoContent, nil, err)
}

// settings is GET /opt-outs/settings: the confirmation texts in force.
func (h *optOutHandlers) settings(c *gin.Context) {
	set, err := h.svc.Settings(c.Request.Context(), MustPrincipal(c).Tenant)
	httpx.Data(c, http.StatusOK, set, err)
}

// putSettings is PUT /opt-outs/settings: absent fields keep their text,
// "" sends no confirmation.
func (h *optOutHandlers) putSettings(c *gin.Context) {
	var in struct {
		OptOutReply *string `json:"opt_out_reply"`
		OptInReply  *string `json:"opt_in_reply"`
	}
	if !httpx.Bind(c, &in) {
		return
	}
	set, err := h.svc.PutSettings(c.Request.Context(), MustPrincipal(c).Tenant,
		consent.SettingsRequest{OptOutReply: in.OptOutReply, OptInReply: in.OptInReply})
	httpx.Data(c, http.StatusOK, set, err)
}
