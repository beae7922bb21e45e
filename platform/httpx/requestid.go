package httpx

import (
	"context"
	"crypto/rand"
	"encoding/hex"

	"github.com/gin-gonic/gin"
)

// RequestIDHeader is the header that carries the request id in both
// directions.
const RequestIDHeader = "X-Request-Id"

// maxRequestIDLen bounds a client-supplied request id so it cannot bloat
// logs or response headers.
const maxRequestIDLen = 128

// requestIDKey is the gin context key holding the request id.
const requestIDKey = "httpx.request_id"

// requestIDCtxKey is the request context key holding the request id.
type requestIDCtxKey struct{}

// RequestID returns the id of the request being served, or "" outside the
// engine built by NewEngine.
func RequestID(c *gin.Context) string { return c.GetString(requestIDKey) }

// RequestIDFromContext returns the request id stored in ctx, or "". It works
// both on a request's context and on a *gin.Context, so services that only
// see a context.Context can still tag their logs.
func RequestIDFromContext(ctx context.Context) string {
	id, _ := ctx.Value(requestIDCtxKey{}).(string)
	return id
}

// requestIDMiddleware echoes a sane client request id or generates one, sets
// it on the response before anything else can write, and stores it in the
// gin context and the request context.
func requestIDMiddleware(c *gin.Context) {
	id := c.GetHeader(RequestIDHeader)
	if !saneRequestID(id) {
		id = newRequestID()
	}
	c.Set(requestIDKey, id)
	c.Request = c.Request.WithContext(context.WithValue(c.Request.Context(), requestIDCtxKey{}, id))
	c.Header(RequestIDHeader, id)
	c.Next()
}

// saneRequestID reports whether id is 1..128 characters of [A-Za-z0-9._-],
// which is safe to echo into headers and logs.
func saneRequestID(id string) bool {
	if id == "" || len(id) > maxRequestIDLen {
		return false
	}
	for i := range len(id) {
		switch b := id[i]; {
		case 'a' <= b && b <= 'z', 'A' <= b && b <= 'Z', '0' <= b && b <= '9', b == '.', b == '_', b == '-':
		default:
			return false
		}
	}
	return true
}

// newRequestID returns 16 random bytes as 32 lower-case hex characters.
func newRequestID() string {
	var b [16]byte
	// crypto/rand.Read never returns an error; it aborts the program if the
	// system's randomness source fails.
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
