package db_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/bizmsg/platform/platform/db"
)

// Citus's refusal of a statement that straddled a tenant schema's move is
// a schema switch and unavailable (503, retried); another internal error
// is neither.
func TestIsSchemaSwitch(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"the switch, wrapped", fmt.Errorf("accept 48 messages: %w", &pgconn.PgError{Code: "XX000",
			Message: "cannot execute a distributed query from a query on a shard"}), true},
		{"another internal error", &pgconn.PgError{Code: "XX000", Message: "could not find the intermediate result"}, false},
		{"the message with another code", &pgconn.PgError{Code: "0A000", Message: "cannot execute a distributed query from a query on a shard"}, false},
		{"not a database error", errors.New("cannot execute a distributed query from a query on a shard"), false},
	} {
		if got := db.IsSchemaSwitch(tc.err); got != tc.want {
			t.Errorf("%s: IsSchemaSwitch = %v, want %v", tc.name, got, tc.want)
		}
		if got := db.IsUnavailable(tc.err); got != tc.want {
			t.Errorf("%s: IsUnavailable = %v, want %v", tc.name, got, tc.want)
		}
	}
}
