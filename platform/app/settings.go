package app

import "github.com/bizmsg/platform/platform/db"

// off is a setting whose 0 means "none" (DB_PREPARED_STATEMENTS,
// DB_MAX_CONN_TENANTS) as package db takes it: negative, since db's 0
// takes its default.
func off(n int) int {
	if n == 0 {
		return -1
	}
	return n
}

// newPrepared is a db.Prepared over the app's pool, keeping up to
// DB_PREPARED_STATEMENTS statements prepared on each connection (0: none).
func (a *App) newPrepared() (*db.Prepared, error) {
	return db.NewPrepared(db.PreparedConfig{DB: a.DB, MaxPerConn: off(a.cfg.DBPreparedStatements)})
}
