package httpx

import (
	"fmt"

	"github.com/gin-gonic/gin"
)

// PrincipalKey keeps an API's authenticated caller, of type P, on the
// request: the API's one authentication middleware sets it, handlers and
// authorization gates read it. Each API has one key of its own type, so a
// caller of one API is never read as the other's.
type PrincipalKey[P any] string

// Set attaches p to the request.
func (k PrincipalKey[P]) Set(c *gin.Context, p *P) { c.Set(string(k), p) }

// From returns the request's caller; false on a route mounted outside the
// API's authenticated group.
func (k PrincipalKey[P]) From(c *gin.Context) (*P, bool) {
	v, ok := c.Get(string(k))
	if !ok {
		return nil, false
	}
	p, ok := v.(*P)
	return p, ok
}

// Must returns the request's caller and panics when there is none (a
// handler mounted outside the authenticated group: a programming error,
// answered 500 by the recovery middleware).
func (k PrincipalKey[P]) Must(c *gin.Context) *P {
	p, ok := k.From(c)
	if !ok {
		panic(fmt.Sprintf("httpx: no %s on the request; mount the handler on the authenticated group", string(k)))
	}
	return p
}

// Gate is route middleware that admits the request when allow returns nil
// for its caller, and otherwise answers allow's error (a 403 apperr, as a
// rule). A route without a caller answers 500: the gate was mounted outside
// the authenticated group.
func (k PrincipalKey[P]) Gate(allow func(*P) error) gin.HandlerFunc {
	return func(c *gin.Context) {
		p, ok := k.From(c)
		if !ok {
			Fail(c, fmt.Errorf("httpx: %s gate on a route without its authentication", string(k)))
			return
		}
		if err := allow(p); err != nil {
			Fail(c, err)
			return
		}
		c.Next()
	}
}
