// Package defaults fills the settings a caller left unset: a Config's
// numeric field at zero (or below it) takes its documented default.
package defaults

import (
	"log/slog"

	"github.com/bizmsg/platform/platform/clock"
)

// Number is a numeric setting: a count, a rate or a time.Duration.
type Number interface {
	~int | ~int8 | ~int16 | ~int32 | ~int64 | ~float32 | ~float64
}

// Positive sets *p to def when *p is not positive, the rule of every
// numeric setting whose zero value means "the default": zero or a negative
// value takes def, a positive one stays.
func Positive[T Number](p *T, def T) {
	if *p <= 0 {
		*p = def
	}
}

// Clock sets *c to the wall clock when the caller left it nil: every
// service takes a clock.Clock so that tests can drive time, and production
// passes none.
func Clock(c *clock.Clock) {
	if *c == nil {
		*c = clock.Real{}
	}
}

// Logger sets *l to slog.Default() when the caller left it nil.
func Logger(l **slog.Logger) {
	if *l == nil {
		*l = slog.Default()
	}
}
