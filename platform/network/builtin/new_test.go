package builtin_test

import (
	"strings"
	"testing"

	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/network/builtin"
)

func TestNewRequiresDB(t *testing.T) {
	t.Parallel()
	for _, cfg := range []builtin.Config{{}, {DB: &db.DB{}}} {
		if _, err := builtin.New(cfg); err == nil || !strings.Contains(err.Error(), "Config.DB is required") {
			t.Fatalf("New(%+v) = %v", cfg, err)
		}
	}
}
