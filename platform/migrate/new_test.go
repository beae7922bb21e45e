package migrate_test

import (
	"strings"
	"testing"

	"github.com/bizmsg/platform/platform/migrate"
)

func TestNewRequiresPool(t *testing.T) {
	t.Parallel()
	if _, err := migrate.New(migrate.Config{}); err == nil || !strings.Contains(err.Error(), "Config.Pool is required") {
		t.Fatalf("New without a pool = %v", err)
	}
}
