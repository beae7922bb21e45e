package db

import (
	"context"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
)

// A Postgres backend keeps what it learns of every relation a statement
// opens (its catalog caches: the relation, its attributes, indexes and
// plans) until the backend ends; nothing evicts it. A tenant schema is
// about 56 relations, and one backend that has served N tenants holds
// about 200 kB × N of them (docs/operations.md, §Memory), so a pool whose
// every connection serves every tenant grows with the number of
// organizations. Config.MaxConnTenants bounds it: a pool connection counts
// the tenant schemas its statements name, and once the count passes the
// bound, the pool closes the connection when it is released (pgxpool's
// AfterRelease) and opens a fresh one when one is next needed. The count
// is kept by the pool's tracer (acquireBound), which sees the text of
// every statement that reaches the connection as text: pgx's Query and
// Exec, a batch's statements, bun's, and db.Prepared's at their first run
// on the connection (the runs of a prepared statement carry its name).

// tenantsKey is where a connection's custom data holds its tenantCount.
const tenantsKey = "bizmsg.tenants"

// tenantCount is the tenant schemas one connection's statements named,
// by organization id, up to the bound; over: the bound was passed.
type tenantCount struct {
	seen map[int64]struct{}
	over bool
}

// countTenant records in conn's count the tenant schema that sql names
// (the first one it names: a statement names one tenant), under the bound
// max.
func countTenant(conn *pgx.Conn, sql string, bound int) {
	id, ok := tenantNamed(sql)
	if !ok {
		return
	}
	data := conn.PgConn().CustomData()
	c, _ := data[tenantsKey].(*tenantCount)
	if c == nil {
		c = &tenantCount{seen: map[int64]struct{}{}}
		data[tenantsKey] = c
	}
	if c.over {
		return
	}
	c.seen[id] = struct{}{}
	if len(c.seen) > bound {
		c.over, c.seen = true, nil
	}
}

// tenantNamed is the organization id of the first tenant schema that sql
// names as a quoted identifier ("tenant_42", as Tenant.Quoted, Table and
// bun.Ident write it).
func tenantNamed(sql string) (int64, bool) {
	const mark = `"` + TenantPrefix
	i := strings.Index(sql, mark)
	if i < 0 {
		return 0, false
	}
	rest := sql[i+len(mark):]
	end := strings.IndexByte(rest, '"')
	if end <= 0 {
		return 0, false
	}
	id, err := strconv.ParseInt(rest[:end], 10, 64)
	return id, err == nil && id > 0
}

// keepConn is the pool's AfterRelease: false (close the connection) once
// it has served more tenant schemas than the bound.
func keepConn(conn *pgx.Conn) bool {
	c, _ := conn.PgConn().CustomData()[tenantsKey].(*tenantCount)
	return c == nil || !c.over
}

// TraceQueryStart counts the tenant of a statement run as text.
func (b acquireBound) TraceQueryStart(ctx context.Context, conn *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	if b.maxTenants > 0 {
		countTenant(conn, data.SQL, b.maxTenants)
	}
	return ctx
}

// TraceQueryEnd does nothing.
func (acquireBound) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// TraceBatchStart does nothing: the batch's statements are counted one by
// one (TraceBatchQuery).
func (acquireBound) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	return ctx
}

// TraceBatchQuery counts the tenant of one statement of a batch.
func (b acquireBound) TraceBatchQuery(_ context.Context, conn *pgx.Conn, data pgx.TraceBatchQueryData) {
	if b.maxTenants > 0 {
		countTenant(conn, data.SQL, b.maxTenants)
	}
}

// TraceBatchEnd does nothing.
func (acquireBound) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}
