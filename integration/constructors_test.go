package integration

import (
	"strings"
	"testing"

	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/migrate"
	"github.com/bizmsg/platform/platform/network/builtin"
	"github.com/bizmsg/platform/platform/queue"
)

// The constructors whose database is a field of their Config refuse a
// Config without it (docs/design.md, §Constructors).
func TestConstructorsRequireTheirDatabase(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		err  func() error
		want string
	}{
		{"db.NewPrepared", func() error { _, err := db.NewPrepared(db.PreparedConfig{}); return err }, "PreparedConfig.DB is required"},
		{"migrate.New", func() error { _, err := migrate.New(migrate.Config{}); return err }, "Config.Pool is required"},
		{"queue.NewClient", func() error { _, err := queue.NewClient(queue.Config{}); return err }, "Config.Pool is required"},
		{"builtin.New", func() error { _, err := builtin.New(builtin.Config{}); return err }, "Config.DB is required"},
		{"builtin.New without a pool", func() error { _, err := builtin.New(builtin.Config{DB: &db.DB{}}); return err }, "Config.DB is required"},
	}
	for _, tt := range tests {
		if err := tt.err(); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s = %v, want an error containing %q", tt.name, err, tt.want)
		}
	}
}
