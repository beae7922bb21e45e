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
// use as the other handlers do).
package resource

import (
	"github.com/gin-gonic/gin"

	"github.com/bizmsg/platform/platform/db"
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
