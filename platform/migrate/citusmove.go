package migrate

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/bizmsg/platform/platform/sqlq"
)

// Rebalancing a Citus cluster (docs/scaling.md, §Rebalancing): an
// organization's tenant schema moves whole to another worker node with
// citus_schema_move while the organization sends.

// Placement is where one organization's tenant schema lives.
type Placement struct {
	Org    int64  `json:"organization_id"`
	Schema string `json:"schema"`
	// Distributed is false for a schema that is still a regular schema of
	// the coordinator (platform admin citus distribute distributes it).
	Distributed bool `json:"distributed"`
	// Node is the worker node (host:port) holding the schema, when
	// distributed.
	Node string `json:"node"`
}

// Move is the outcome of MoveTenant.
type Move struct {
	Org    int64  `json:"organization_id"`
	Schema string `json:"schema"`
	From   string `json:"from"`
	To     string `json:"to"`
	// Took is how long citus_schema_move ran.
	Took time.Duration `json:"took_ns"`
}

// requireCitus fails unless the migrator's database is a Citus coordinator.
func (m *Migrator) requireCitus(ctx context.Context) error {
	on, err := m.Citus(ctx)
	if err != nil {
		return err
	}
	if !on {
		return errors.New("the database has no citus extension: it is not a Citus coordinator")
	}
	return nil
}

// Placements lists every organization's tenant schema and the node that
// holds it, from Citus's metadata (pg_dist_schema, and the placement of the
// schema's shards), by organization id. It fails on a database without
// Citus.
func (m *Migrator) Placements(ctx context.Context) ([]Placement, error) {
	if err := m.requireCitus(ctx); err != nil {
		return nil, err
	}
	rows, err := m.query(ctx, m.pool, m.cq, "placements", "", nil)
	if err != nil {
		return nil, fmt.Errorf("list placements: %w", err)
	}
	out, err := pgx.CollectRows(rows, scanPlacement)
	if err != nil {
		return nil, fmt.Errorf("list placements: %w", err)
	}
	return out, nil
}

// scanPlacement scans one row of queries/citus/placements.sql or
// placement_of.sql.
func scanPlacement(row pgx.CollectableRow) (Placement, error) {
	var p Placement
	var node *string
	if err := row.Scan(&p.Org, &p.Schema, &p.Distributed, &node); err != nil {
		return p, err
	}
	if node != nil {
		p.Node = *node
	}
	return p, nil
}

// placementOf is organization org's placement; it fails naming the
// organization when there is none or it has no tenant schema.
func (m *Migrator) placementOf(ctx context.Context, org int64) (Placement, error) {
	rows, err := m.query(ctx, m.pool, m.cq, "placement_of", "", sqlq.Args{"org": org})
	if err != nil {
		return Placement{}, fmt.Errorf("placement of organization %d: %w", org, err)
	}
	p, err := pgx.CollectExactlyOneRow(rows, scanPlacement)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return p, fmt.Errorf("no organization %d", org)
	case err != nil:
		return p, fmt.Errorf("placement of organization %d: %w", org, err)
	case p.Schema == "":
		return p, fmt.Errorf("organization %d has no tenant schema", org)
	}
	return p, nil
}

// MoveTenant moves organization org's tenant schema whole to the worker
// node node (host:port) with citus_schema_move in shard transfer mode
// auto: logical replication when every table has a replica identity (all
// tenant tables have primary keys), so that the organization's writes go
// on during the copy and wait only while Citus switches the placement
// over. It holds the schema's migration lock meanwhile, so no migration
// changes the schema during the move. It fails on a database without
// Citus, for an unknown organization, a schema that is not distributed, a
// node that is not an active worker of the cluster, or the node the
// schema is on already.
func (m *Migrator) MoveTenant(ctx context.Context, org int64, node string) (Move, error) {
	if err := m.requireCitus(ctx); err != nil {
		return Move{}, err
	}
	host, portText, err := net.SplitHostPort(node)
	if err != nil {
		return Move{}, fmt.Errorf("node %q: want host:port: %w", node, err)
	}
	port, err := strconv.Atoi(portText)
	if err != nil || port <= 0 || port > 65535 {
		return Move{}, fmt.Errorf("node %q: the port must be a number from 1 to 65535", node)
	}
	p, err := m.placementOf(ctx, org)
	if err != nil {
		return Move{}, err
	}
	if !p.Distributed {
		return Move{}, fmt.Errorf("%s (organization %d) is not a distributed schema: run platform admin citus distribute first", p.Schema, org)
	}
	var group *int32
	var workers string
	if err := m.queryRow(ctx, m.pool, m.cq, "node", "", sqlq.Args{"host": host, "port": port}).Scan(&group, &workers); err != nil {
		return Move{}, fmt.Errorf("look up node %s: %w", node, err)
	}
	switch {
	case group == nil:
		return Move{}, fmt.Errorf("node %s is not an active node of the cluster (workers: %s)", node, workers)
	case *group == 0:
		return Move{}, fmt.Errorf("node %s is the coordinator: tenant schemas live on workers (%s)", node, workers)
	case p.Node == host+":"+strconv.Itoa(port):
		return Move{}, fmt.Errorf("%s (organization %d) is on %s already", p.Schema, org, p.Node)
	}
	mv := Move{Org: org, Schema: p.Schema, From: p.Node}
	err = m.withLock(ctx, p.Schema, func(conn *pgxpool.Conn) error {
		start := time.Now()
		if err := m.exec(ctx, conn, m.cq, "schema_move", "", sqlq.Args{"name": p.Schema, "host": host, "port": port}); err != nil {
			return err
		}
		mv.Took = time.Since(start)
		return nil
	})
	if err != nil {
		return mv, fmt.Errorf("move %s (organization %d) from %s to %s: %w", p.Schema, org, p.Node, node, err)
	}
	after, err := m.placementOf(ctx, org)
	if err != nil {
		return mv, err
	}
	mv.To = after.Node
	return mv, nil
}
