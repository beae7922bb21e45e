package tenant

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/bizmsg/platform/platform/apikey"
	"github.com/bizmsg/platform/platform/httpx"
	"github.com/bizmsg/platform/platform/lookup"
	"github.com/bizmsg/platform/platform/phone"
)

// MountLookup registers the contact lookup on g, the authenticated group
// Mount returns:
//
//	GET /contacts/lookup?phone=...[&sender_number_id=|&sender_phone=]
//	    contacts.lookup  200 the lookup result, unwrapped
func MountLookup(g gin.IRoutes, svc *lookup.Service) {
	g.GET("/contacts/lookup", RequireScope(apikey.ScopeContactsLookup), func(c *gin.Context) {
		p := MustPrincipal(c)
		res, err := svc.Lookup(c.Request.Context(), p.Tenant, lookup.Query{
			Phone:          phone.FromQuery(c.Query("phone")),
			SenderNumberID: c.Query("sender_number_id"),
			SenderPhone:    phone.FromQuery(c.Query("sender_phone")),
		})
		httpx.Reply(c, http.StatusOK, res, err)
	})
}
