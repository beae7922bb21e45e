// Package devsecrets keeps the secrets a development service generates
// (config.Config.Generated) in its database, in central.dev_secrets, so that
// a restart, and every other process on the same database, uses the same
// values: API keys keep authenticating, and access tokens, OTPs and
// dashboard sessions stay valid. Production sets every secret in its
// environment and never calls it (README.md, §Configuration).
package devsecrets

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/uptrace/bun"
)

// secretRow is the bun model of central.dev_secrets.
type secretRow struct {
	bun.BaseModel `bun:"table:central.dev_secrets,alias:s"`

	Name  string `bun:"name,pk"`
	Value []byte `bun:"value"`
}

// Keep returns the development value of the secret called name: the one
// kept in central.dev_secrets if there is one, else generated, which is
// stored and returned. Of several processes starting at once the first to
// insert wins and the others read its value (an insert ON CONFLICT DO
// NOTHING waits for the winner's commit). created reports whether this
// call stored generated.
func Keep(ctx context.Context, idb bun.IDB, name string, generated []byte) (value []byte, created bool, err error) {
	res, err := idb.NewInsert().Model(&secretRow{Name: name, Value: generated}).
		On("CONFLICT (name) DO NOTHING").Exec(ctx)
	if err != nil {
		return nil, false, fmt.Errorf("keep development secret %s: %w", name, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return nil, false, fmt.Errorf("keep development secret %s: %w", name, err)
	}
	var found bool
	value, found, err = Read(ctx, idb, name)
	if err != nil {
		return nil, false, err
	}
	if !found {
		return nil, false, fmt.Errorf("read development secret %s: %w", name, sql.ErrNoRows)
	}
	return value, n == 1, nil
}

// Read returns the development value of the secret called name kept in
// central.dev_secrets, and whether there is one; it writes nothing (the
// operator commands read what the service kept).
func Read(ctx context.Context, idb bun.IDB, name string) (value []byte, found bool, err error) {
	var r secretRow
	err = idb.NewSelect().Model(&r).Column("value").Where("s.name = ?", name).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("read development secret %s: %w", name, err)
	}
	return r.Value, true, nil
}
