package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/bizmsg/platform/platform/db"
)

// citusCluster is a local 3-node Citus cluster (a coordinator and two
// workers) that bench send -citus starts with scripts/citus-cluster in a
// directory of its own, on free ports, and destroys at the end.
type citusCluster struct {
	script string
	dir    string
	stderr io.Writer
}

// startCitus starts a fresh cluster with script (scripts/citus-cluster,
// which installs Citus with the shared installer where it is missing). Its
// output goes to stderr. The caller must destroy the cluster, also when
// startCitus fails (a node may have started).
func startCitus(ctx context.Context, script string, stderr io.Writer) (*citusCluster, error) {
	if err := checkCitusScript(script); err != nil {
		return nil, err
	}
	// Not a private temporary directory's child: the servers run as
	// postgres when the bench runs as root (the script chowns dir).
	dir, err := os.MkdirTemp("", "bizmsg-bench-citus-")
	if err != nil {
		return nil, fmt.Errorf("citus cluster directory: %w", err)
	}
	c := &citusCluster{script: script, dir: dir, stderr: stderr}
	if _, err := c.run(ctx, "start", dir); err != nil {
		return c, err
	}
	return c, nil
}

// checkCitusScript fails unless script is there to run.
func checkCitusScript(script string) error {
	if _, err := os.Stat(script); err != nil {
		return fmt.Errorf("-citus needs scripts/citus-cluster (run from the repository's root or set -citus-script): %w", err)
	}
	return nil
}

// run runs the script with args, its stderr to the bench's, and returns
// its stdout's last line (the URL start and createdb print).
func (c *citusCluster) run(ctx context.Context, args ...string) (string, error) {
	var out strings.Builder
	cmd := exec.CommandContext(ctx, c.script, args...) //nolint:gosec // G204: the repository's cluster script, with the bench's own arguments
	cmd.Stdout, cmd.Stderr = &out, c.stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("citus-cluster %s: %w", strings.Join(args, " "), err)
	}
	lines := strings.Fields(out.String())
	if len(lines) == 0 {
		return "", nil
	}
	return lines[len(lines)-1], nil
}

// createdb creates database name on every node with the citus extension
// and the workers added, and returns the coordinator's URL for it: the
// service finds Citus there and distributes each tenant schema.
func (c *citusCluster) createdb(ctx context.Context, name string) (string, error) {
	u, err := c.run(ctx, "createdb", name, c.dir)
	if err != nil {
		return "", err
	}
	if u == "" {
		return "", errors.New("citus-cluster createdb printed no URL")
	}
	return u, nil
}

// stop stops the three servers, even when ctx is cancelled (an
// interrupted run), and deletes the cluster's directory unless keep (then
// stderr says where it is, for scripts/citus-cluster start).
func (c *citusCluster) stop(ctx context.Context, keep bool) error {
	if keep {
		_, err := c.run(context.WithoutCancel(ctx), "stop", c.dir)
		fmt.Fprintf(c.stderr, "citus cluster kept (stopped) in %s\n", c.dir)
		return err
	}
	_, err := c.run(context.WithoutCancel(ctx), "destroy", c.dir)
	return err
}

// citusPlacement is where the tenant schemas of a run on the cluster are,
// read from the coordinator's Citus catalog (pg_dist_schema is what
// citus_schemas lists) after the fixtures.
type citusPlacement struct {
	// Tenants is the tenant schemas the fixtures created; Distributed
	// those that are distributed schemas.
	Tenants     int `json:"tenants"`
	Distributed int `json:"distributed"`
	// Nodes is how many of them each node (host:port) holds.
	Nodes map[string]int `json:"nodes"`
}

func (p citusPlacement) String() string {
	nodes := make([]string, 0, len(p.Nodes))
	for _, n := range slices.Sorted(maps.Keys(p.Nodes)) {
		nodes = append(nodes, fmt.Sprintf("%s %d", n, p.Nodes[n]))
	}
	return fmt.Sprintf("%d of %d tenant schemas distributed (node: schemas %s)", p.Distributed, p.Tenants, strings.Join(nodes, ", "))
}

// readPlacement reads where the tenants' schemas are and fails unless every
// one is a distributed schema on a worker: a run that silently stayed on the
// coordinator is no run on the cluster.
func readPlacement(ctx context.Context, d *db.DB, tenants []benchTenant) (citusPlacement, error) {
	schemas := make([]string, len(tenants))
	for i, t := range tenants {
		schemas[i] = t.Tenant.Schema
	}
	p := citusPlacement{Tenants: len(schemas), Nodes: map[string]int{}}
	rows, err := d.Pool.Query(ctx, `SELECT n.nodename || ':' || n.nodeport, count(DISTINCT s.schemaid)
		FROM pg_dist_schema s
		JOIN pg_dist_partition p ON p.colocationid = s.colocationid
		JOIN pg_dist_shard sh ON sh.logicalrelid = p.logicalrelid
		JOIN pg_dist_placement pl ON pl.shardid = sh.shardid
		JOIN pg_dist_node n ON n.groupid = pl.groupid
		WHERE s.schemaid::regnamespace::text = ANY($1)
		GROUP BY 1 ORDER BY 1`, schemas)
	if err != nil {
		return p, fmt.Errorf("tenant schemas on the cluster: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var node string
		var n int
		if err := rows.Scan(&node, &n); err != nil {
			return p, fmt.Errorf("tenant schemas on the cluster: %w", err)
		}
		p.Nodes[node] = n
	}
	if err := rows.Err(); err != nil {
		return p, fmt.Errorf("tenant schemas on the cluster: %w", err)
	}
	if err := d.Pool.QueryRow(ctx, `SELECT count(*) FROM pg_dist_schema WHERE schemaid::regnamespace::text = ANY($1)`,
		schemas).Scan(&p.Distributed); err != nil {
		return p, fmt.Errorf("tenant schemas on the cluster: %w", err)
	}
	if p.Distributed != p.Tenants {
		return p, fmt.Errorf("only %s", p)
	}
	return p, nil
}

// nodeName is the script's name of the node at hostport (worker1,
// worker2 or coordinator), by the port each node's directory records.
func (c *citusCluster) nodeName(hostport string) (string, error) {
	_, port, _ := strings.Cut(hostport, ":")
	for _, n := range []string{"coordinator", "worker1", "worker2"} {
		b, err := os.ReadFile(filepath.Join(c.dir, n, "port")) //nolint:gosec // G304: the cluster directory this bench made
		if err == nil && strings.TrimSpace(string(b)) == port {
			return n, nil
		}
	}
	return "", fmt.Errorf("no node of %s listens on %s", c.dir, hostport)
}
