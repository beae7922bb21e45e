package migrate

import (
	"context"
	"fmt"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/sqlq"
)

// On a Citus coordinator (docs/scaling.md, §Run on Citus) the migrator keeps
// the central, network and river schemas regular schemas of the coordinator
// and makes every tenant schema a distributed schema, which Citus places
// whole on one worker node, at the end of the transaction that creates or
// migrates it. It needs no setting: a database where the citus
// extension exists is a coordinator.

// citusState caches whether the database has the citus extension; it is read
// once, on first use (an extension is not dropped under a running service).
type citusState struct {
	mu    sync.Mutex
	known bool
	on    bool
}

// Citus reports whether the migrator's database is a Citus coordinator (the
// citus extension exists in it).
func (m *Migrator) Citus(ctx context.Context) (bool, error) { return m.citusVia(ctx, m.pool) }

// citusVia is Citus, asking q (a transaction the caller holds, so that no
// second connection is needed) when the answer is not known yet.
func (m *Migrator) citusVia(ctx context.Context, q db.Querier) (bool, error) {
	m.citusState.mu.Lock()
	defer m.citusState.mu.Unlock()
	if m.citusState.known {
		return m.citusState.on, nil
	}
	var on bool
	err := m.queryRow(ctx, q, m.q, "has_citus", "", nil).Scan(&on)
	if err != nil {
		return false, fmt.Errorf("detect citus: %w", err)
	}
	m.citusState.known, m.citusState.on = true, on
	return on, nil
}

// localSchemas makes the schemas tx creates regular schemas of the coordinator
// whatever the server's citus.enable_schema_based_sharding: a tenant schema is
// migrated as a regular one and distributed after (distributeTx), because
// Citus refuses some of the migrations' DDL on distributed tables (ADD COLUMN
// with a CHECK constraint). A no-op without Citus.
func (m *Migrator) localSchemas(ctx context.Context, tx pgx.Tx, citus bool) error {
	if !citus {
		return nil
	}
	if err := m.exec(ctx, tx, m.q, "local_schemas", "", nil); err != nil {
		return fmt.Errorf("set citus.enable_schema_based_sharding: %w", err)
	}
	return nil
}

// distributeTx makes schema a distributed schema in tx unless it is one
// already: Citus moves its tables, functions and rows whole to one worker.
func (m *Migrator) distributeTx(ctx context.Context, tx pgx.Tx, schema string) error {
	if err := m.exec(ctx, tx, m.cq, "distribute", "", sqlq.Args{"name": schema}); err != nil {
		return fmt.Errorf("distribute %s: %w", schema, err)
	}
	return nil
}

// Distribution is one tenant schema's placement on a Citus cluster.
type Distribution struct {
	Schema string `json:"schema"`
	// Distributed is false for a schema that is still a regular schema of
	// the coordinator.
	Distributed bool `json:"distributed"`
	// Node is the node (host:port) holding the schema, when distributed.
	Node string `json:"node"`
	// Moved reports that DistributeTenants distributed it in this run.
	Moved bool `json:"moved"`
}

// DistributeTenants makes every organization's tenant schema that is still a
// regular coordinator schema a distributed schema (citus_schema_distribute:
// Citus moves it whole to a worker node), one schema per transaction, and
// reports where each one is. It is how an installation that began on one
// server moves onto a cluster (platform admin citus distribute); new
// tenants are distributed at creation. It fails on a database without Citus.
// central.organizations stays a coordinator table: as a reference table it
// would turn every central table with a foreign key to it into a Citus local
// table, where Citus refuses statements the services use (docs/scaling.md,
// §Measured).
func (m *Migrator) DistributeTenants(ctx context.Context, progress Progress) ([]Distribution, error) {
	on, err := m.Citus(ctx)
	if err != nil {
		return nil, err
	}
	if !on {
		return nil, fmt.Errorf("the database has no citus extension: it is not a Citus coordinator")
	}
	tenants, err := m.Tenants(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]Distribution, 0, len(tenants))
	for i, t := range tenants {
		d, err := m.distribute(ctx, t.Schema)
		if err != nil {
			return out, fmt.Errorf("distribute %s: %w", t.Schema, err)
		}
		out = append(out, d)
		if progress != nil {
			progress(i+1, len(tenants))
		}
	}
	return out, nil
}

// distribute distributes one schema (under its migration lock, so that no
// migration changes it meanwhile) unless it is already, and reports its node.
func (m *Migrator) distribute(ctx context.Context, schema string) (Distribution, error) {
	d := Distribution{Schema: schema}
	err := m.withLock(ctx, schema, func(conn *pgxpool.Conn) error {
		return pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			if err := m.queryRow(ctx, tx, m.cq, "undistributed", "", sqlq.Args{"name": schema}).Scan(&d.Moved); err != nil {
				return err
			}
			return m.distributeTx(ctx, tx, schema)
		})
	})
	if err != nil {
		return d, err
	}
	return m.placement(ctx, d)
}

// placement fills in where a schema lives.
func (m *Migrator) placement(ctx context.Context, d Distribution) (Distribution, error) {
	var node *string
	err := m.queryRow(ctx, m.pool, m.cq, "placement", "", sqlq.Args{"name": d.Schema}).Scan(&node)
	if err != nil {
		return d, fmt.Errorf("placement of %s: %w", d.Schema, err)
	}
	if node != nil {
		d.Distributed, d.Node = true, *node
	}
	return d, nil
}
