// Package devsecrets keeps the secrets a development service generates
// (config.Config.Generated) in its database, in central.dev_secrets, so that
// a restart, and every other process on the same database, uses the same
// values: API keys keep authenticating, and access tokens, OTPs and
// dashboard sessions stay valid. Production sets every secret in its
// environment and never calls it (README.md, §Configuration).
package devsecrets

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Keep returns the development value of the secret called name: the one
// kept in central.dev_secrets if there is one, else generated, which is
// stored and returned. Of several processes starting at once the first to
// insert wins and the others read its value (INSERT ... ON CONFLICT DO
// NOTHING waits for the winner's commit). created reports whether this
// call stored generated.
func Keep(ctx context.Context, pool *pgxpool.Pool, name string, generated []byte) (value []byte, created bool, err error) {
	tag, err := pool.Exec(ctx, `INSERT INTO central.dev_secrets (name, value) VALUES ($1, $2)
		ON CONFLICT (name) DO NOTHING`, name, generated)
	if err != nil {
		return nil, false, fmt.Errorf("keep development secret %s: %w", name, err)
	}
	if err := pool.QueryRow(ctx, `SELECT value FROM central.dev_secrets WHERE name = $1`, name).Scan(&value); err != nil {
		return nil, false, fmt.Errorf("read development secret %s: %w", name, err)
	}
	return value, tag.RowsAffected() == 1, nil
}

// Read returns the development value of the secret called name kept in
// central.dev_secrets, and whether there is one; it writes nothing (the
// operator commands read what the service kept).
func Read(ctx context.Context, pool *pgxpool.Pool, name string) (value []byte, found bool, err error) {
	err = pool.QueryRow(ctx, `SELECT value FROM central.dev_secrets WHERE name = $1`, name).Scan(&value)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("read development secret %s: %w", name, err)
	}
	return value, true, nil
}
