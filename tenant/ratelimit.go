package tenant

import (
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/bizmsg/platform/platform/apperr"
	"github.com/bizmsg/platform/platform/httpx"
	"github.com/bizmsg/platform/platform/keys"
	"github.com/bizmsg/platform/platform/ratelimit"
)

// CodeRateLimited is the error code of a 429 for a key over its request rate.
const CodeRateLimited = "rate_limited"

// limitFor is the request-rate limit of the principal's key: the
// organization's own api_rate_limit/api_rate_burst, else the API's defaults.
func (a *API) limitFor(p *Principal) ratelimit.Limit {
	return keys.RequestLimit(p.Organization, a.rateDefault)
}

// rateLimit is the per-key request-rate middleware, after Authenticate: each
// API key has its own token bucket; every response carries the RateLimit-*
// fields; a request over the limit gets 429 rate_limited with Retry-After and
// does nothing. The decision is the one made with the key's lookup when the
// keys service decides rates (one round trip for both), else the Limiter's.
// A Limiter's failure (a shared limiter whose store is down) lets the
// request through and is logged: rate limiting protects the service, it
// must not take it down.
func (a *API) rateLimit(c *gin.Context) {
	p := MustPrincipal(c)
	var d ratelimit.Decision
	switch {
	case p.rate != nil:
		d = *p.rate
	case a.limiter == nil:
		c.Next()
		return
	default:
		var err error
		if d, err = a.limiter.Allow(c.Request.Context(), strconv.FormatInt(p.KeyID, 10), a.limitFor(p)); err != nil {
			a.log.WarnContext(c.Request.Context(), "api rate limiter failed; request let through", "api_key_id", p.KeyID, "error", err)
			c.Next()
			return
		}
	}
	if d.Limit.Valid() {
		d.SetHeaders(c.Writer.Header())
	}
	if !d.Allowed {
		httpx.Fail(c, apperr.RateLimited(CodeRateLimited,
			"Too many requests for this API key; retry after the time in Retry-After.", d.RetryAfter))
		return
	}
	c.Next()
}
