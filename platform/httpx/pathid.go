package httpx

import (
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/bizmsg/platform/platform/apperr"
)

// PathID reads the :id path parameter of a resource: a positive integer in
// its plain decimal form (digits only: no sign, space or leading zero), so
// that each resource has one path. Anything else is not an id, and the
// caller answers 404 (docs/api.md, §Status codes).
func PathID(c *gin.Context) (int64, bool) {
	return ParseID(c.Param("id"))
}

// PathIDOr404 is PathID answering 404, naming what (a malformed id names
// nothing that exists), when the parameter is not an id.
func PathIDOr404(c *gin.Context, what string) (int64, bool) {
	id, ok := PathID(c)
	if !ok {
		Fail(c, apperr.NotFound(what))
	}
	return id, ok
}

// ParseID reads s as PathID does.
func ParseID(s string) (int64, bool) {
	if s == "" || s[0] == '0' {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	id, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, false
	}
	return id, true
}
