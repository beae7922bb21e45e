package webhooks_test

import (
	"testing"

	"github.com/bizmsg/platform/platform/webhooks"
)

// New refuses a Config without its required dependencies.
func TestNewChecksDependencies(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	cases := []struct {
		name string
		cfg  webhooks.Config
	}{
		{"no DB", webhooks.Config{Jobs: f.river}},
		{"no Jobs", webhooks.Config{DB: f.db}},
	}
	for _, c := range cases {
		if _, err := webhooks.New(c.cfg); err == nil {
			t.Errorf("%s: New succeeded", c.name)
		}
	}
}
