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

// Citus's reports of a connection to a worker node broken during a
// statement or a commit (the errors TestCitusWorkerDown met) are a node
// lost and unavailable; another internal error, or the words with another
// code, are neither.
func TestIsNodeLost(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"a statement's connection closed, wrapped", fmt.Errorf("accept message: %w", &pgconn.PgError{Code: "XX000",
			Message: "server closed the connection unexpectedly\n\tThis probably means the server terminated abnormally\n\tbefore or while processing the request."}), true},
		{"a commit's", fmt.Errorf("commit: %w", &pgconn.PgError{Code: "XX000",
			Message: "server closed the connection unexpectedly\n\tThis probably means the server terminated abnormally\n\tbefore or while processing the request.\ninvalid socket"}), true},
		{"an essential connection failed", &pgconn.PgError{Code: "XX000", Message: "failure on connection marked as essential: 127.0.0.1:42686"}, true},
		{"a placement's commit", fmt.Errorf("commit: %w", &pgconn.PgError{Code: "XX000",
			Message: "could not commit transaction for shard 102027 on at least one active node"}), true},
		{"an intermediate result's copy", &pgconn.PgError{Code: "58030", Message: "failed to COPY to shard 0 on 127.0.0.1:29305"}, true},
		{"another internal error", &pgconn.PgError{Code: "XX000", Message: "could not find the intermediate result"}, false},
		{"another I/O error", &pgconn.PgError{Code: "58030", Message: "could not read file"}, false},
		{"the words with another code", &pgconn.PgError{Code: "22000", Message: "server closed the connection unexpectedly"}, false},
	} {
		if got := db.IsNodeLost(tc.err); got != tc.want {
			t.Errorf("%s: IsNodeLost = %v, want %v", tc.name, got, tc.want)
		}
		if got := db.IsUnavailable(tc.err); got != tc.want {
			t.Errorf("%s: IsUnavailable = %v, want %v", tc.name, got, tc.want)
		}
	}
}
