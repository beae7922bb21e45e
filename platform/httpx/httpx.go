// Package httpx is the HTTP foundation shared by both APIs: a gin engine with
// request ids, access logs, panic recovery, metrics, a body size limit and the
// one error renderer, plus JSON binding and a server with graceful shutdown.
//
// Handlers report failures with Fail(c, err); err is usually an *apperr.Error
// from a service, and the renderer turns it into the error envelope
//
//	{"message": "...", "code": "...", "errors": {"field": ["..."]}, "request_id": "..."}
//
// so services never deal with status codes.
package httpx

import (
	"log/slog"
	"net/http"
	"net/netip"
	"os"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/bizmsg/platform/platform/apperr"
	"github.com/bizmsg/platform/platform/defaults"
	"github.com/bizmsg/platform/platform/metrics"
)

// DefaultMaxBodyBytes is the request body limit when Config.MaxBodyBytes is
// not positive.
const DefaultMaxBodyBytes int64 = 1 << 20

// Config configures NewEngine.
type Config struct {
	// Logger receives access logs, failures and panics. Default: a JSON
	// logger on stderr.
	Logger *slog.Logger
	// Metrics, if set, records every request. Default: no metrics.
	Metrics *metrics.Metrics
	// MaxBodyBytes limits request bodies. Default: DefaultMaxBodyBytes (1 MiB).
	MaxBodyBytes int64
	// Classify maps errors that are not *apperr.Error, e.g. turning a
	// "database unavailable" error into apperr.Unavailable. It returns nil
	// for errors it does not recognise, which then render as 500. Optional.
	Classify func(error) *apperr.Error
	// TrustedProxies are the reverse proxies (TRUSTED_PROXIES) whose
	// X-Forwarded-For gin's ClientIP reads. Default none: ClientIP is the
	// connection's peer and forwarding headers are ignored.
	TrustedProxies []netip.Prefix
}

// withDefaults returns c with unset fields defaulted.
func (c Config) withDefaults() Config {
	if c.Logger == nil {
		c.Logger = slog.New(slog.NewJSONHandler(os.Stderr, nil))
	}
	defaults.Positive(&c.MaxBodyBytes, DefaultMaxBodyBytes)
	return c
}

// NewEngine returns a gin engine with the shared middleware installed, in
// this order (outermost first):
//
//  1. request id: echo a sane X-Request-Id or generate one;
//  2. access log: one structured line per request;
//  3. metrics (if configured): outside recovery so panics count as 500s;
//  4. panic recovery: log the panic and stack, render a plain 500;
//  5. error renderer: render the error a handler passed to Fail;
//  6. body limit: 413 for a declared Content-Length over the limit, and a
//     capped body reader for the rest.
//
// Unknown paths render 404 "not_found", known paths with the wrong method
// 405 "method_not_allowed" with an Allow header. It puts gin in release mode.
//
// ClientIP (login throttling, access logs) is the connection's remote
// address, unless that address is in cfg.TrustedProxies: then it is the
// rightmost address of X-Forwarded-For that is not itself a trusted proxy.
// No other header (X-Real-IP, a platform's) is ever read.
func NewEngine(cfg Config) *gin.Engine {
	cfg = cfg.withDefaults()
	gin.SetMode(gin.ReleaseMode)

	e := gin.New()
	e.HandleMethodNotAllowed = true
	e.ContextWithFallback = true
	trustProxies(e, cfg.TrustedProxies, cfg.Logger)

	r := &renderer{log: cfg.Logger, classify: cfg.Classify}
	e.Use(requestIDMiddleware, accessLog(cfg.Logger))
	if cfg.Metrics != nil {
		e.Use(observe(cfg.Metrics))
	}
	e.Use(r.recovery, r.middleware, bodyLimit(cfg.MaxBodyBytes))
	e.NoRoute(r.notFound)
	e.NoMethod(r.methodNotAllowed)
	return e
}

// trustProxies makes e read X-Forwarded-For from the proxies in trusted
// only, and from nobody when trusted is empty (gin's own default trusts
// every peer).
func trustProxies(e *gin.Engine, trusted []netip.Prefix, log *slog.Logger) {
	e.RemoteIPHeaders = []string{"X-Forwarded-For"}
	e.TrustedPlatform = ""
	cidrs := make([]string, len(trusted))
	for i, p := range trusted {
		cidrs[i] = p.String()
	}
	e.ForwardedByClientIP = len(cidrs) > 0
	if len(cidrs) == 0 {
		cidrs = nil
	}
	if err := e.SetTrustedProxies(cidrs); err != nil {
		// The prefixes were parsed already (config.ParseTrustedProxies), so
		// gin cannot refuse them; if it ever did, trusting nobody is the
		// safe side.
		log.Error("httpx: trusted proxies refused; forwarding headers are ignored", "error", err)
		e.ForwardedByClientIP = false
		_ = e.SetTrustedProxies(nil)
	}
}

// JSON writes v as a JSON response with the given status.
func JSON(c *gin.Context, status int, v any) {
	c.JSON(status, v)
}

// Reply answers err (Fail), or status with v when err is nil.
func Reply(c *gin.Context, status int, v any, err error) {
	if err != nil {
		Fail(c, err)
		return
	}
	JSON(c, status, v)
}

// Data is Reply with v in the one envelope of a resource, {"data": v}.
func Data(c *gin.Context, status int, v any, err error) {
	if err != nil {
		Fail(c, err)
		return
	}
	JSON(c, status, gin.H{"data": v})
}

// Bind decodes the request body into dst (BindJSON), or answers the error
// and returns false.
func Bind(c *gin.Context, dst any) bool {
	if err := BindJSON(c, dst); err != nil {
		Fail(c, err)
		return false
	}
	return true
}

// NoStore keeps a response that carries a secret (a token, a plain key, a
// signing secret) out of caches.
func NoStore(c *gin.Context) { c.Header("Cache-Control", "no-store") }

// ReplySecret is Reply for a v that carries a secret: kept out of caches.
func ReplySecret(c *gin.Context, status int, v any, err error) {
	if err == nil {
		NoStore(c)
	}
	Reply(c, status, v, err)
}

// accessLog logs one line per request with its method, route, path (never
// the query string), status, duration, size, request id and client IP.
// Headers and bodies are never logged.
func accessLog(log *slog.Logger) gin.HandlerFunc {
	return func(c *gin.Context) {
		start := time.Now()
		c.Next()
		status := c.Writer.Status()
		level := slog.LevelInfo
		if status >= 500 {
			level = slog.LevelError
		}
		log.LogAttrs(c.Request.Context(), level, "http request",
			slog.String("method", c.Request.Method),
			slog.String("route", c.FullPath()),
			slog.String("path", c.Request.URL.Path),
			slog.Int("status", status),
			slog.Float64("duration_ms", float64(time.Since(start).Microseconds())/1000),
			slog.Int("bytes", max(c.Writer.Size(), 0)),
			slog.String("request_id", RequestID(c)),
			slog.String("client_ip", c.ClientIP()),
		)
	}
}

// observe records each request in m, labelled by route pattern.
func observe(m *metrics.Metrics) gin.HandlerFunc {
	return func(c *gin.Context) {
		start := time.Now()
		c.Next()
		m.ObserveHTTP(c.Request.Method, c.FullPath(), c.Writer.Status(), time.Since(start))
	}
}

// bodyLimit rejects a declared Content-Length over limit straight away and
// caps every other body, so a chunked upload fails with *http.MaxBytesError
// once it passes the limit.
func bodyLimit(limit int64) gin.HandlerFunc {
	return func(c *gin.Context) {
		if c.Request.ContentLength > limit {
			Fail(c, apperr.New(apperr.KindTooLarge, "payload_too_large", bodyLimitMessage(limit)))
			return
		}
		if c.Request.Body != nil {
			c.Request.Body = http.MaxBytesReader(c.Writer, c.Request.Body, limit)
		}
		c.Next()
	}
}
