// Package resource holds the HTTP handlers of the resources both APIs serve:
// API keys, sender numbers, messages and usage. The Tenant API (package
// tenant, X-Api-Key and scopes) and the Central API (package central,
// Bearer and roles) mount the same handlers behind their own authentication
// and authorization; each gives a CallerFunc that reads its authenticated
// caller, so a rule of the resource is written once.
//
// Handlers are thin: parse the request, call the service with the caller's
// organization, render the result in the one envelope ({"data": ...}, or
// the error body of package httpx, whose Bind, PathIDOr404 and Data they
// use as the other handlers do). A request on one thing named by the path's
// id goes through one or oneWith, which read the id (and body) in that
// order.
package resource

import (
	"context"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/httpx"
	"github.com/bizmsg/platform/platform/keys"
)

// Caller is the authenticated caller of a request, as both APIs know it.
type Caller struct {
	// OrgID is the caller's organization.
	OrgID int64
	// Tenant routes the organization's queries to its schema.
	Tenant db.Tenant
	// Actor is the caller as the keys service sees it: a user, and the key
	// (with its scopes) when the caller is an API key.
	Actor keys.Actor
	// Admin reports whether the caller may change the organization's
	// limits (an owner or admin signed in to the dashboard).
	Admin bool
}

// CallerFunc returns the caller of a request that passed the API's
// authentication middleware.
type CallerFunc func(*gin.Context) Caller

// one answers a request on the thing of the caller's organization whose id
// the path holds (404 naming thing when it is not an id): 200 with what op
// returns for it, or op's error.
func one[T any](c *gin.Context, caller CallerFunc, thing string, op func(context.Context, db.Tenant, int64) (T, error)) {
	id, ok := httpx.PathIDOr404(c, thing)
	if !ok {
		return
	}
	v, err := op(c.Request.Context(), caller(c).Tenant, id)
	httpx.Data(c, http.StatusOK, v, err)
}

// oneWith is one for a request with a JSON body: once the id is read, the
// body is bound into a Req (its error answered) and op gets it with the
// caller.
func oneWith[Req, T any](c *gin.Context, caller CallerFunc, thing string, op func(context.Context, Caller, int64, Req) (T, error)) {
	id, ok := httpx.PathIDOr404(c, thing)
	if !ok {
		return
	}
	var req Req
	if !httpx.Bind(c, &req) {
		return
	}
	v, err := op(c.Request.Context(), caller(c), id, req)
	httpx.Data(c, http.StatusOK, v, err)
}
