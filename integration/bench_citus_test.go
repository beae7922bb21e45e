package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bizmsg/platform/platform/dbtest"
)

// `platform bench send -citus`, tiny: one invocation runs the phases on
// DATABASE_URL's server and then on a 3-node Citus cluster it starts, and
// prints the sweep of both side by side, every accepted message sent exactly
// once in each. The cluster run is checked to be one: the bench stops the
// cluster at the end (-keep keeps its directory), and started again its
// coordinator lists both tenants' schemas in citus_schemas, placed on
// workers.
func TestBenchSendCitus(t *testing.T) {
	t.Parallel()
	script, err := filepath.Abs("../scripts/citus-cluster")
	if err != nil {
		t.Fatal(err)
	}
	name := fmt.Sprintf("bizmsg_bench_citus_%d", time.Now().UnixNano())
	t.Cleanup(func() { dropServerDatabase(t, name) })
	out := filepath.Join(t.TempDir(), "bench.json")
	stdout, stderr := runBench(t, "send", "-citus", "-citus-script", script, "-keep",
		"-tenants", "1,2", "-duration", "1s", "-sweep-duration", "1s", "-sweep-rounds", "1", "-sweep-warmup", "0",
		"-senders", "2", "-recipients", "20", "-concurrency", "4", "-backlog", "100",
		"-pair-rounds", "0", "-webhook-rounds", "0", "-webhook-slices", "0", "-drain-workers", "0",
		"-log-level", "warn", "-db", name, "-out", out)

	kept := regexp.MustCompile(`citus cluster kept \(stopped\) in (\S+)`).FindStringSubmatch(stderr)
	if kept == nil {
		t.Fatalf("stderr does not say where the kept cluster is:\n%s", stderr)
	}
	dir := kept[1]
	t.Cleanup(func() {
		if out, err := exec.CommandContext(context.Background(), script, "destroy", dir).CombinedOutput(); err != nil {
			t.Errorf("citus-cluster destroy: %v\n%s", err, out)
		}
	})
	status, err := exec.CommandContext(t.Context(), script, "status", dir).Output()
	if err != nil && !strings.Contains(string(status), "stopped") {
		t.Fatalf("citus-cluster status: %v\n%s", err, status)
	}
	if strings.Contains(string(status), "running") {
		t.Errorf("the bench left the cluster running:\n%s", status)
	}

	for _, want := range []string{"== single server", "== Citus cluster", "2 of 2 tenant schemas distributed",
		"tenant sweep, single server beside the Citus cluster", "| single server", "| Citus cluster"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, stdout)
		}
	}
	// One row per tenant count, both columns delivered exactly once.
	cells := `\s+\d+ /s\s+x[\d.]+\s+[\d.]+ / +[\d.]+\s+(true|false)\s+`
	row := regexp.MustCompile(`(?m)^(\d+)\s+\|` + cells + `\|` + cells + `\|\s+x[\d.]+$`)
	rows := row.FindAllStringSubmatch(stdout, -1)
	if len(rows) != 2 || rows[0][1] != "1" || rows[1][1] != "2" {
		t.Fatalf("side-by-side rows %q, want one for 1 and one for 2 tenants:\n%s", rows, stdout)
	}
	for _, r := range rows {
		if r[2] != "true" || r[3] != "true" {
			t.Errorf("%s tenant(s): exactly once %s on one server, %s on the cluster", r[1], r[2], r[3])
		}
	}

	raw, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	type sweep []struct {
		Tenants int `json:"tenants"`
		Send    struct {
			OK int64 `json:"ok"`
		} `json:"send"`
		Delivery struct {
			ExactlyOnce bool `json:"exactly_once"`
		} `json:"delivery"`
	}
	var rep struct {
		Single struct {
			Sweep sweep `json:"sweep"`
		} `json:"single_server"`
		Citus struct {
			Sweep sweep `json:"sweep"`
			Citus struct {
				Distributed int            `json:"distributed"`
				Nodes       map[string]int `json:"nodes"`
			} `json:"citus"`
		} `json:"citus"`
	}
	if err := json.Unmarshal(raw, &rep); err != nil {
		t.Fatalf("decode %s: %v", out, err)
	}
	for run, s := range map[string]sweep{"single server": rep.Single.Sweep, "citus": rep.Citus.Sweep} {
		if len(s) != 2 {
			t.Fatalf("%s: %d sweep entries, want 2", run, len(s))
		}
		for _, e := range s {
			if e.Send.OK == 0 || !e.Delivery.ExactlyOnce {
				t.Errorf("%s, %d tenant(s): %+v, want sends delivered exactly once", run, e.Tenants, e)
			}
		}
	}
	if rep.Citus.Citus.Distributed != 2 || len(rep.Citus.Citus.Nodes) == 0 {
		t.Errorf("report's placement %+v, want 2 tenant schemas distributed", rep.Citus.Citus)
	}

	// Not the bench's word for it: the coordinator's.
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	if out, err := exec.CommandContext(ctx, script, "start", dir).CombinedOutput(); err != nil {
		t.Fatalf("citus-cluster start %s: %v\n%s", dir, err, out)
	}
	u, err := exec.CommandContext(ctx, script, "createdb", name, dir).Output()
	if err != nil {
		t.Fatalf("citus-cluster createdb: %v", err)
	}
	conn, err := pgx.Connect(ctx, strings.TrimSpace(string(u)))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var orgs, distributed, onWorkers int
	if err := conn.QueryRow(ctx, `SELECT count(*),
		count(*) FILTER (WHERE schema_name IN (SELECT schema_name::text FROM citus_schemas)),
		count(*) FILTER (WHERE EXISTS (SELECT 1 FROM pg_dist_schema s
			JOIN pg_dist_partition p ON p.colocationid = s.colocationid
			JOIN pg_dist_shard sh ON sh.logicalrelid = p.logicalrelid
			JOIN pg_dist_placement pl ON pl.shardid = sh.shardid
			JOIN pg_dist_node n ON n.groupid = pl.groupid
			WHERE s.schemaid::regnamespace::text = o.schema_name AND n.noderole = 'primary' AND n.groupid <> 0))
		FROM central.organizations o WHERE o.schema_name IS NOT NULL`).Scan(&orgs, &distributed, &onWorkers); err != nil {
		t.Fatal(err)
	}
	if orgs != 2 || distributed != 2 || onWorkers != 2 {
		t.Errorf("coordinator: %d bench organizations, %d of their schemas in citus_schemas, %d on a worker; want 2, 2, 2", orgs, distributed, onWorkers)
	}
}

// dropServerDatabase drops database name on the test server, if it exists.
func dropServerDatabase(t *testing.T, name string) {
	admin, err := pgx.Connect(context.Background(), dbtest.ServerURL(t))
	if err != nil {
		t.Errorf("drop %s: %v", name, err)
		return
	}
	defer admin.Close(context.Background())
	if _, err := admin.Exec(context.Background(), "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
		t.Errorf("drop %s: %v", name, err)
	}
}
