package tenant

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/bizmsg/platform/platform/accounts"
	"github.com/bizmsg/platform/platform/httpx"
	"github.com/bizmsg/platform/platform/keys"
)

// meBody is GET /me's data.
type meBody struct {
	User         *accounts.User        `json:"user"`
	APIKey       keys.Resource         `json:"api_key"`
	Organization accounts.Organization `json:"organization"`
	Subscription accounts.Subscription `json:"subscription"`
}

// me is GET /me: the tenant context of the calling key. user is the user the
// key acts for (its creator), null when unknown or no longer a member.
func (a *API) me(c *gin.Context) {
	p := MustPrincipal(c)
	httpx.JSON(c, http.StatusOK, gin.H{"data": meBody{
		User:         p.User,
		APIKey:       p.Key.Resource(a.keys.Now()),
		Organization: p.Organization,
		Subscription: p.Organization.Subscription(),
	}})
}
