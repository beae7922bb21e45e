package db_test

import (
	"context"
	"strings"
	"testing"

	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/dbtest"
)

// The pool's connections carry the configured application_name, "bizmsg"
// by default, and one the URL names wins.
func TestApplicationName(t *testing.T) {
	t.Parallel()
	base := dbtest.NewDatabase(t)
	tests := []struct {
		name   string
		url    string
		config string
		want   string
	}{
		{"default", base, "", "bizmsg"},
		{"configured", base, "bizmsg worker", "bizmsg worker"},
		{"url wins", base + map[bool]string{false: "?", true: "&"}[strings.Contains(base, "?")] + "application_name=mine", "bizmsg worker", "mine"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			d, err := db.Open(context.Background(), db.Config{URL: tt.url, MaxConns: 1, ApplicationName: tt.config})
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			var got string
			if err := d.Pool.QueryRow(context.Background(), `SHOW application_name`).Scan(&got); err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("application_name = %q, want %q", got, tt.want)
			}
		})
	}
}
