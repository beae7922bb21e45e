package httpx

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"slices"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/bizmsg/platform/platform/apperr"
)

// internalMessage and internalCode are what clients see for any failure that
// is the server's fault; the real cause only goes to the log.
const (
	internalMessage = "Internal server error."
	internalCode    = "internal_error"
)

// Fail records err for the error renderer and stops the handler chain. The
// renderer writes the error envelope once the chain unwinds. Handlers should
// return right after calling Fail.
func Fail(c *gin.Context, err error) {
	if err == nil {
		err = errors.New("httpx: Fail called with a nil error")
	}
	_ = c.Error(err)
	c.Abort()
}

// StatusOf returns the HTTP status code for an apperr kind. Unknown kinds
// map to 500.
func StatusOf(k apperr.Kind) int {
	statuses := [...]int{
		apperr.KindInternal:             http.StatusInternalServerError,
		apperr.KindMalformed:            http.StatusBadRequest,
		apperr.KindUnauthenticated:      http.StatusUnauthorized,
		apperr.KindForbidden:            http.StatusForbidden,
		apperr.KindNotFound:             http.StatusNotFound,
		apperr.KindConflict:             http.StatusConflict,
		apperr.KindTooLarge:             http.StatusRequestEntityTooLarge,
		apperr.KindUnsupportedMediaType: http.StatusUnsupportedMediaType,
		apperr.KindInvalid:              http.StatusUnprocessableEntity,
		apperr.KindRateLimited:          http.StatusTooManyRequests,
		apperr.KindUnavailable:          http.StatusServiceUnavailable,
	}
	if k < 0 || int(k) >= len(statuses) {
		return statuses[apperr.KindInternal]
	}
	return statuses[k]
}

// renderer turns errors into the JSON error envelope. It is the only code
// that writes error responses.
type renderer struct {
	log      *slog.Logger
	classify func(error) *apperr.Error
}

// middleware renders the last error recorded with Fail (or c.Error) after
// the rest of the chain has run.
func (r *renderer) middleware(c *gin.Context) {
	c.Next()
	if len(c.Errors) == 0 {
		return
	}
	err := c.Errors.Last().Err
	if c.Writer.Written() {
		r.log.LogAttrs(c.Request.Context(), slog.LevelError, "error after the response was written",
			slog.String("error", err.Error()),
			slog.String("request_id", RequestID(c)),
			slog.String("method", c.Request.Method),
			slog.String("route", c.FullPath()),
		)
		return
	}
	e := r.resolve(err)
	status := StatusOf(e.Kind)
	r.logFailure(c, status, e, err)
	r.write(c, status, e)
}

// resolve finds the *apperr.Error for err: one in its chain, else whatever
// the Classify hook makes of it, else an internal error wrapping it.
func (r *renderer) resolve(err error) *apperr.Error {
	if e, ok := apperr.As(err); ok {
		return e
	}
	if r.classify != nil {
		if e := r.classify(err); e != nil {
			return e
		}
	}
	return apperr.Wrap(err, apperr.KindInternal, internalCode, internalMessage)
}

// logFailure logs server-side failures with their cause at error level, and
// client errors that carry a cause at debug level.
func (r *renderer) logFailure(c *gin.Context, status int, e *apperr.Error, err error) {
	level := slog.LevelError
	if status < http.StatusInternalServerError {
		if e.Err == nil {
			return
		}
		level = slog.LevelDebug
	}
	r.log.LogAttrs(c.Request.Context(), level, "request failed",
		slog.Int("status", status),
		slog.String("kind", e.Kind.String()),
		slog.String("code", e.Code),
		slog.String("error", err.Error()),
		slog.String("request_id", RequestID(c)),
		slog.String("method", c.Request.Method),
		slog.String("route", c.FullPath()),
	)
}

// recovery turns a panic into a logged stack trace and a plain 500 envelope.
// http.ErrAbortHandler is re-raised so net/http can abort the connection as
// the handler intended.
func (r *renderer) recovery(c *gin.Context) {
	defer func() {
		v := recover()
		if v == nil {
			return
		}
		if err, ok := v.(error); ok && errors.Is(err, http.ErrAbortHandler) {
			panic(v)
		}
		r.log.LogAttrs(c.Request.Context(), slog.LevelError, "panic while serving request",
			slog.String("panic", fmt.Sprint(v)),
			slog.String("stack", string(debug.Stack())),
			slog.String("request_id", RequestID(c)),
			slog.String("method", c.Request.Method),
			slog.String("route", c.FullPath()),
		)
		c.Abort()
		if !c.Writer.Written() {
			r.write(c, http.StatusInternalServerError, &apperr.Error{})
		}
	}()
	c.Next()
}

// notFound answers requests that match no route.
func (r *renderer) notFound(c *gin.Context) {
	Fail(c, apperr.New(apperr.KindNotFound, "not_found", "The requested endpoint does not exist."))
}

// methodNotAllowed answers requests whose path exists under other methods.
// gin has already set the Allow header.
func (r *renderer) methodNotAllowed(c *gin.Context) {
	c.Abort()
	// No Kind maps to 405, so the status is given explicitly.
	r.write(c, http.StatusMethodNotAllowed,
		apperr.New(apperr.KindMalformed, "method_not_allowed", "The method is not allowed for this endpoint."))
}

// write renders e as the error envelope with the given status:
//
//	{"message": "...", "code": "...", "errors": {...}, <details>, "request_id": "..."}
//
// Server-side failures (5xx other than 503) always render the generic
// internal message so no cause can leak.
func (r *renderer) write(c *gin.Context, status int, e *apperr.Error) {
	var buf bytes.Buffer
	buf.WriteByte('{')
	if status >= http.StatusInternalServerError && e.Kind != apperr.KindUnavailable {
		writeMember(&buf, "message", internalMessage, false)
		writeMember(&buf, "code", internalCode, true)
	} else {
		msg, code := e.Message, e.Code
		if msg == "" {
			msg = e.Kind.DefaultMessage()
		}
		if code == "" {
			code = e.Kind.DefaultCode()
		}
		writeMember(&buf, "message", msg, false)
		writeMember(&buf, "code", code, true)
		if len(e.Fields) > 0 {
			writeMember(&buf, "errors", e.Fields, true)
		}
		r.writeDetails(c, &buf, e.Details)
		if e.RetryAfter > 0 {
			secs := int64((e.RetryAfter + time.Second - 1) / time.Second)
			c.Header("Retry-After", strconv.FormatInt(secs, 10))
		}
	}
	writeMember(&buf, "request_id", RequestID(c), true)
	buf.WriteByte('}')
	c.Data(status, "application/json; charset=utf-8", buf.Bytes())
}

// writeDetails appends the Details members in key order, skipping keys that
// would shadow the envelope and values that cannot be encoded.
func (r *renderer) writeDetails(c *gin.Context, buf *bytes.Buffer, details map[string]any) {
	keys := make([]string, 0, len(details))
	for k := range details {
		if !isEnvelopeKey(k) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		v, err := json.Marshal(details[k])
		if err != nil {
			r.log.LogAttrs(c.Request.Context(), slog.LevelError, "error detail not encodable",
				slog.String("key", k),
				slog.String("error", err.Error()),
				slog.String("request_id", RequestID(c)),
			)
			continue
		}
		writeRawMember(buf, k, v, true)
	}
}

// isEnvelopeKey reports whether key belongs to the envelope itself, so a
// detail may not override it.
func isEnvelopeKey(key string) bool {
	switch key {
	case "message", "code", "errors", "request_id":
		return true
	}
	return false
}

// writeMember appends "key": value to buf. Values here are strings and
// string maps, which always encode.
func writeMember(buf *bytes.Buffer, key string, value any, comma bool) {
	v, err := json.Marshal(value)
	if err != nil {
		v = []byte("null")
	}
	writeRawMember(buf, key, v, comma)
}

// writeRawMember appends "key": raw to buf, preceded by a comma if asked.
func writeRawMember(buf *bytes.Buffer, key string, raw []byte, comma bool) {
	if comma {
		buf.WriteByte(',')
	}
	k, _ := json.Marshal(key)
	buf.Write(k)
	buf.WriteByte(':')
	buf.Write(raw)
}
