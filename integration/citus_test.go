package integration

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/bizmsg/platform/migrations"
	"github.com/bizmsg/platform/platform/migrate"
)

// citusCluster is a local 3-node Citus cluster started by
// scripts/citus-cluster for one test binary's Citus tests.
type citusCluster struct {
	dir    string
	script string
}

// startCitusCluster starts a coordinator and two workers under a fresh
// directory (installing Citus with the installer scripts/citus-cluster finds where it is
// missing) and stops and deletes them when the test ends, unless
// CITUS_KEEP is set (to look at it with psql). It fails, never skips, when
// the cluster cannot start.
func startCitusCluster(t *testing.T) *citusCluster {
	t.Helper()
	script, err := filepath.Abs("../scripts/citus-cluster")
	if err != nil {
		t.Fatal(err)
	}
	// Not t.TempDir: its parents are private to this user, and the servers
	// run as postgres.
	dir, err := os.MkdirTemp("", "bizmsg-citus-") //nolint:usetesting // see above
	if err != nil {
		t.Fatal(err)
	}
	c := &citusCluster{dir: dir, script: script}
	t.Cleanup(func() {
		if os.Getenv("CITUS_KEEP") != "" {
			t.Logf("CITUS_KEEP: the cluster stays in %s", dir)
			return
		}
		if out, err := exec.CommandContext(context.Background(), script, "destroy", dir).CombinedOutput(); err != nil {
			t.Errorf("citus-cluster destroy: %v\n%s", err, out)
		}
	})
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, script, "start", dir).CombinedOutput()
	if err != nil {
		t.Fatalf("the Citus tests need a local 3-node Citus cluster (scripts/citus-cluster start, which installs Citus "+
			"with its installer (CITUS_INSTALLER) as root where it is missing), and it did not start: %v\n%s", err, out)
	}
	return c
}

// createdb creates a database on every node with citus and the workers
// added, and returns the coordinator's URL for it.
func (c *citusCluster) createdb(t *testing.T) string {
	t.Helper()
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	name := "bizmsg_citus_" + hex.EncodeToString(b)
	out, err := exec.CommandContext(t.Context(), c.script, "createdb", name, c.dir).CombinedOutput()
	if err != nil {
		t.Fatalf("citus-cluster createdb: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return lines[len(lines)-1]
}

// coordinatorLog is the coordinator's server log.
func (c *citusCluster) coordinatorLog() string {
	return filepath.Join(c.dir, "coordinator", "server.log")
}

// exec runs sql on the database at url.
func execSQL(t *testing.T, url, sql string) {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close(context.Background()) }()
	if _, err := conn.Exec(t.Context(), sql); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// docs/scaling.md, §Run on Citus: the service on a coordinator and two
// workers, detecting Citus by itself. Every organization's schema is a
// distributed schema living whole on one worker, the organizations land on
// both workers, each registers, confirms a sender number (OTP through the
// network, the sender directory, River jobs), adds a webhook endpoint and
// receives an inbound message; then each runs the lifecycle
// (citusLifecycle: send, delivered, read, a reply) and a small campaign
// (citusCampaigns), its endpoint hearing each event once
// (citusExactlyOnce), and none sees another's; each adds and removes
// opt-outs through the API and the dashboard (citusOptOuts) and
// redelivers webhook deliveries (citusRedeliveries). No
// transaction but provisioning writes a tenant schema and a coordinator
// table (measureSpanning), and every two-phase commit is provisioning or
// a statement named in stillTwoPC (checkTwoPC). The migrator's Citus
// statements prepare and plan on the coordinator (checkCitusQueries).
func TestCitusCluster(t *testing.T) {
	t.Parallel()
	cluster := startCitusCluster(t)
	url := cluster.createdb(t)
	// Every statement of this database in the coordinator's log, with its
	// virtual transaction id; 2PC records kept (no recovery sweeps them).
	execSQL(t, url, fmt.Sprintf("ALTER DATABASE %s SET log_statement = 'all'", pgx.Identifier{dbName(t, url)}.Sanitize()))
	execSQL(t, url, fmt.Sprintf("ALTER DATABASE %s SET citus.log_remote_commands = on", pgx.Identifier{dbName(t, url)}.Sanitize()))
	execSQL(t, url, fmt.Sprintf("ALTER DATABASE %s SET log_min_messages = notice", pgx.Identifier{dbName(t, url)}.Sanitize()))
	execSQL(t, url, "ALTER SYSTEM SET citus.recover_2pc_interval = -1")
	execSQL(t, url, "SELECT pg_reload_conf()")
	logged := twoPCCount(t, url)

	e := startMsg(t, Options{DatabaseURL: url, Workers: true, Env: map[string]string{"WEBHOOK_ALLOW_PRIVATE": "true"}})
	ctx := t.Context()
	pool := e.App.DB.Pool
	t.Cleanup(func() { logJobErrors(t, url) })

	const orgs = 4
	// Each step's two-phase commits, counted in pg_dist_transaction.
	twoPC := func() int {
		var n int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM pg_dist_transaction`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	runs := make([]*citusOrg, orgs)
	before := twoPC()
	for i := range runs {
		runs[i] = &citusOrg{org: e.Register(t), phone: phoneN(100 + i), recipient: phoneN(200 + i)}
	}
	registered := twoPC()
	for _, r := range runs {
		r.sid = e.activeSender(r.org, r.phone)
	}
	confirmed := twoPC()
	for _, r := range runs {
		r.rcv = newReceiver(t)
		r.hook = createWebhook(t, e.Env, r.org.Key(), map[string]any{"url": r.rcv.srv.URL + "/in", "events": citusEvents})
	}
	t.Logf("pg_dist_transaction records: %d for %d registrations, %d for %d sender numbers registered and confirmed, %d for %d webhook endpoints",
		registered-before, orgs, confirmed-registered, orgs, twoPC()-confirmed, orgs)

	// Each tenant schema is distributed, whole on one worker, and the
	// organizations are on both workers.
	nodes := map[string]int{}
	var coordinatorPort int
	if err := pool.QueryRow(ctx, `SELECT nodeport FROM pg_dist_node WHERE groupid = 0`).Scan(&coordinatorPort); err != nil {
		t.Fatal(err)
	}
	for _, r := range runs {
		rows, err := pool.Query(ctx, `SELECT DISTINCT nodename || ':' || nodeport FROM citus_shards
			WHERE citus_table_type = 'schema' AND colocation_id = (SELECT colocation_id FROM citus_schemas WHERE schema_name = $1::regnamespace)`,
			r.org.Tenant.Schema)
		if err != nil {
			t.Fatal(err)
		}
		placements, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		if len(placements) != 1 || strings.HasSuffix(placements[0], fmt.Sprintf(":%d", coordinatorPort)) {
			t.Fatalf("%s is on %v: want a distributed schema whole on one worker", r.org.Tenant.Schema, placements)
		}
		nodes[placements[0]]++
	}
	if len(nodes) != 2 {
		t.Fatalf("the %d organizations are on %v, want both workers", orgs, nodes)
	}
	t.Logf("tenant schemas per worker: %v", nodes)
	for _, schema := range []string{"central", "network", "river"} {
		var distributed bool
		if err := pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM citus_schemas WHERE schema_name::text = $1)`, schema).Scan(&distributed); err != nil {
			t.Fatal(err)
		}
		if distributed {
			t.Fatalf("%s is a distributed schema, want a regular coordinator schema", schema)
		}
	}
	checkCitusQueries(t, pool)

	// Isolation between organizations on different nodes: each lists only
	// its own sender number and webhook endpoint, and reads none of the
	// others'.
	for i, r := range runs {
		other := runs[(i+1)%orgs]
		var senders struct {
			Data []struct {
				ID int64 `json:"id"`
			} `json:"data"`
		}
		e.Do(Request{Method: http.MethodGet, Path: "/api/v1/sender-numbers", Header: r.org.Key()}).JSON(t, &senders)
		if len(senders.Data) != 1 || senders.Data[0].ID != r.sid {
			t.Fatalf("%s lists sender numbers %+v, want only %d", r.org.Name, senders.Data, r.sid)
		}
		var hooks struct {
			Data []webhookEndpoint `json:"data"`
		}
		e.Do(Request{Method: http.MethodGet, Path: "/api/v1/webhooks", Header: r.org.Key()}).JSON(t, &hooks)
		if len(hooks.Data) != 1 || hooks.Data[0].URL != r.hook.URL {
			t.Fatalf("%s lists webhooks %+v, want only %s", r.org.Name, hooks.Data, r.hook.URL)
		}
		if resp := e.Do(Request{Method: http.MethodGet, Path: fmt.Sprintf("/api/v1/webhooks/%d", other.hook.ID),
			Header: r.org.Key()}); resp.Status != http.StatusNotFound && other.hook.ID != r.hook.ID {
			t.Fatalf("%s reads another organization's webhook %d: %d", r.org.Name, other.hook.ID, resp.Status)
		}
	}

	// An inbound message (a recipient writes to the sender number) lands in
	// its organization's schema on its worker, and in no other.
	beforeInbound := twoPC()
	for _, r := range runs {
		e.recipient(r.recipient)
		if _, err := e.net.Send(ctx, r.recipient, r.phone, "hello to "+r.org.Name); err != nil {
			t.Fatal(err)
		}
	}
	poll := time.NewTicker(50 * time.Millisecond)
	defer poll.Stop()
	for _, r := range runs {
		want := r.recipient
		deadline := time.Now().Add(30 * time.Second)
		for {
			var list struct {
				Data []message `json:"data"`
			}
			e.Do(Request{Method: http.MethodGet, Path: messagesPath + "?direction=inbound", Header: r.org.Key()}).JSON(t, &list)
			if len(list.Data) == 1 && list.Data[0].FromPhone != nil && *list.Data[0].FromPhone == want {
				break
			}
			if len(list.Data) > 1 || time.Now().After(deadline) {
				t.Fatalf("%s's inbound messages: %+v, want one from %s", r.org.Name, list.Data, want)
			}
			<-poll.C
		}
	}

	t.Logf("pg_dist_transaction records: %d for %d inbound messages", twoPC()-beforeInbound, orgs)

	// A reply from each organization, on its distributed schema: accepted
	// by the acceptance statement on the worker (its daily-limit counter
	// raised there once), claimed and delivered by the delivery worker
	// (the claim takes the organization's default limit as an argument:
	// docs/scaling.md, §Run on Citus), read and answered; then a campaign.
	beforeSends := twoPC()
	citusLifecycle(t, e, runs)
	for _, r := range runs {
		var used, dispatched int
		if err := pool.QueryRow(ctx, fmt.Sprintf(`SELECT coalesce(sum(used) FILTER (WHERE side = 'accept'), 0),
			coalesce(sum(dispatched) FILTER (WHERE side = 'deliver'), 0) FROM %s.daily_usage WHERE sender_number_id = $1`,
			pgx.Identifier{r.org.Tenant.Schema}.Sanitize()), r.sid).Scan(&used, &dispatched); err != nil {
			t.Fatal(err)
		}
		if used != 1 || dispatched != 1 {
			t.Fatalf("%s: 'accept' counter %d, 'deliver' counter %d: want the message counted once on each side", r.org.Name, used, dispatched)
		}
	}
	t.Logf("pg_dist_transaction records: %d for %d sends with their delivery, read and reply", twoPC()-beforeSends, orgs)
	citusCampaigns(t, e, runs)
	citusConsentAndTemplates(t, e, runs)
	citusOptOuts(t, e, runs)
	citusExactlyOnce(t, e, runs)
	citusRedeliveries(t, e, runs)
	var early int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM river.river_job WHERE errors::text LIKE '%not visible yet%'`).Scan(&early); err != nil {
		t.Fatal(err)
	}
	t.Logf("jobs that ran before their tenant row was visible (retried once): %d", early)

	// An installation that began on one server: a tenant schema that is a
	// regular coordinator schema (made as a single server makes it, with a
	// row) is distributed by DistributeTenants (platform admin citus
	// distribute), with its rows. (citus_schema_undistribute cannot make
	// one: it refuses the identity column of opt_outs.)
	const oldOrg = 9000
	old := singleServerTenant(t, url, oldOrg)
	placed, err := e.App.Migrator.DistributeTenants(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(placed) != orgs+1 {
		t.Fatalf("DistributeTenants placed %d schemas, want %d", len(placed), orgs+1)
	}
	for _, p := range placed {
		if !p.Distributed || p.Node == "" || p.Moved != (p.Schema == old) {
			t.Fatalf("DistributeTenants: %+v (the single-server schema: %s)", p, old)
		}
	}
	var kept string
	if err := pool.QueryRow(ctx, `SELECT phone FROM `+pgx.Identifier{old, "opt_outs"}.Sanitize()).Scan(&kept); err != nil || kept != "+14155559999" {
		t.Fatalf("the distributed schema's row: %q, %v", kept, err)
	}
	first := runs[0]
	var senders struct {
		Data []struct {
			ID int64 `json:"id"`
		} `json:"data"`
	}
	e.Do(Request{Method: http.MethodGet, Path: "/api/v1/sender-numbers", Header: first.org.Key()}).JSON(t, &senders)
	if len(senders.Data) != 1 || senders.Data[0].ID != first.sid {
		t.Fatalf("after its redistribution %s lists sender numbers %+v, want %d", first.org.Name, senders.Data, first.sid)
	}

	// The job outbox (docs/scaling.md, §Jobs): no send, delivery, webhook
	// outbox expansion, campaign tick or completion, template review,
	// opt-out confirmation, opt-out by the API or the dashboard (its audit
	// entry through the outbox), sender number registration or confirmation
	// (its directory entry and OTP job through the outbox) wrote a tenant
	// schema and a coordinator table in one transaction, and every outbox
	// was moved. What still spans is named (docs/scaling.md, §What crosses
	// nodes today): an organization's provisioning.
	for first := range measureSpanning(t, cluster, pool) {
		if !stillSpans(first) {
			t.Fatalf("a transaction wrote a tenant schema and a coordinator table: %s", first)
		}
	}
	checkTwoPC(t, cluster, url, logged, pool)
	for _, r := range runs {
		var left int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM `+r.org.Tenant.Table("job_outbox")).Scan(&left); err != nil || left != 0 {
			t.Fatalf("%s: %d job outbox rows left (%v): want every job moved into River", r.org.Name, left, err)
		}
	}
	measureOnePhase(t, url, runs[0].org.Tenant.Schema)
}

// stillSpans reports whether a spanning transaction, by its first
// statement, is one docs/scaling.md names as still spanning: an
// organization's provisioning.
func stillSpans(first string) bool {
	return strings.HasPrefix(first, "UPDATE central.organizations SET schema_name") ||
		strings.HasPrefix(first, `INSERT INTO "central"."organizations"`)
}

// logJobErrors logs, when the test failed, the last error of each River
// job that has one: what a statement Citus refuses leaves behind.
func logJobErrors(t *testing.T, url string) {
	if !t.Failed() {
		return
	}
	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Logf("job errors: %v", err)
		return
	}
	defer func() { _ = conn.Close(context.Background()) }()
	rows, err := conn.Query(context.Background(), `SELECT kind || ' ' || state || ': ' || (errors[array_upper(errors, 1)]->>'error')
		FROM river.river_job WHERE errors IS NOT NULL ORDER BY id DESC LIMIT 20`)
	if err != nil {
		t.Logf("job errors: %v", err)
		return
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	t.Logf("River jobs' last errors (newest first, %v): %q", err, lines)
}

// singleServerTenant makes organization id's tenant schema as a single
// server has it: a regular schema, migrated, with an opt-out row.
func singleServerTenant(t *testing.T, url string, id int64) string {
	t.Helper()
	schema := fmt.Sprintf("tenant_%d", id)
	set, err := migrate.LoadSet(migrations.Tenant())
	if err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close(context.Background()) }()
	err = pgx.BeginFunc(t.Context(), conn, func(tx pgx.Tx) error {
		stmts := []string{
			`INSERT INTO central.organizations (id, name, subscription_status, default_daily_limit, created_at, schema_name)
			 VALUES (` + fmt.Sprint(id) + `, 'single server', 'trialing', 100, now(), '` + schema + `')`,
			"SET LOCAL citus.enable_schema_based_sharding TO off",
			"CREATE SCHEMA " + schema,
			"SET LOCAL search_path TO " + schema,
			"CREATE TABLE schema_migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())",
		}
		for _, m := range set {
			stmts = append(stmts, migrate.Statements(m.SQL)...)
			stmts = append(stmts, fmt.Sprintf("INSERT INTO schema_migrations (version, name) VALUES (%d, '%s')", m.Version, m.Name))
		}
		stmts = append(stmts, "INSERT INTO opt_outs (phone, source, created_at) VALUES ('+14155559999', 'api', now())")
		for _, s := range stmts {
			if _, err := tx.Exec(t.Context(), s); err != nil {
				return fmt.Errorf("%s: %w", s, err)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return schema
}

// dbName is the database a URL names.
func dbName(t *testing.T, url string) string {
	t.Helper()
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	return cfg.Database
}

// logEntry matches the start of a coordinator log line (citus-cluster's
// log_line_prefix: '%m [%p] vxid=%v xid=%x db=%d ').
var logEntry = regexp.MustCompile(`^\d{4}-\d\d-\d\d [0-9:.]+ \S+ \[\d+\] vxid=(\S*) xid=\d+ db=(\S*) (.*)$`)

// measureSpanning reads the coordinator's statement log and counts the
// transactions that wrote a tenant schema and a coordinator table (River's
// jobs, central), and the 2PC records Citus kept; it logs the figures
// (docs/scaling.md, §Measured). It returns the spanning transactions'
// counts by their first statement and commit.
func measureSpanning(t *testing.T, c *citusCluster, pool interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}) map[string]int {
	t.Helper()
	f, err := os.Open(c.coordinatorLog())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	type txn struct {
		tenant, river, central, prepared bool
		first                            string
	}
	txns := map[string]*txn{}
	var cur *txn
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	writes := regexp.MustCompile(`(?i)(insert\s+into|update|delete\s+from|copy)\s+"?(tenant_\d+|river|central)"?\.`)
	for sc.Scan() {
		line := sc.Text()
		if m := logEntry.FindStringSubmatch(line); m != nil {
			cur = nil
			if m[1] == "" || !strings.Contains(m[3], "statement:") && !strings.Contains(m[3], "execute") && !strings.Contains(m[3], "issuing") {
				continue
			}
			if txns[m[1]] == nil {
				txns[m[1]] = &txn{}
			}
			cur, line = txns[m[1]], m[3]
			if low := strings.ToLower(line); cur.first == "" && !strings.Contains(low, "begin") && !strings.Contains(low, "issuing") &&
				!strings.Contains(low, "set local") {
				_, text, _ := strings.Cut(line, ": ")
				_, text, _ = strings.Cut(text, ": ")
				cur.first = strings.Join(strings.Fields(text), " ")
				if len(cur.first) > 90 {
					cur.first = cur.first[:90]
				}
			}
		}
		if strings.Contains(line, "issuing PREPARE TRANSACTION") {
			cur.prepared = true
		}
		if cur == nil {
			continue
		}
		for _, w := range writes.FindAllStringSubmatch(line, -1) {
			switch {
			case strings.HasPrefix(w[2], "tenant_"):
				cur.tenant = true
			case w[2] == "river":
				cur.river = true
			default:
				cur.central = true
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	var withRiver, withCentral, tenantOnly int
	for _, x := range txns {
		switch {
		case x.tenant && x.river:
			withRiver++
		case x.tenant && x.central:
			withCentral++
		case x.tenant:
			tenantOnly++
		}
		if x.tenant && x.river && x.central {
			withCentral++
		}
	}
	prepared, spanning := map[string]int{}, map[string]int{}
	for _, x := range txns {
		if x.prepared {
			prepared[x.first]++
		}
		if x.tenant && (x.river || x.central) {
			commit := " (one-phase)"
			if x.prepared {
				commit = " (2PC)"
			}
			spanning[x.first+commit]++
		}
	}
	t.Logf("transactions Citus committed in two phases, by their first statement: %v", prepared)
	t.Logf("transactions that wrote a tenant schema and a coordinator table, by their first statement: %v", spanning)
	var twoPC int
	if err := pool.QueryRow(t.Context(), `SELECT count(*) FROM pg_dist_transaction`).Scan(&twoPC); err != nil {
		t.Fatal(err)
	}
	t.Logf("coordinator statement log: %d transactions; %d wrote a tenant schema and river (jobs), %d a tenant schema and central, "+
		"%d a tenant schema alone; pg_dist_transaction holds %d two-phase-commit records", len(txns), withRiver, withCentral, tenantOnly, twoPC)
	if withCentral == 0 {
		t.Fatalf("the statement log shows no provisioning spanning a tenant schema and the coordinator: the measurement is broken")
	}
	return spanning
}

// measureOnePhase commits, in one transaction, a row in a table of a
// distributed tenant schema (a worker) and a River job (a coordinator
// table), as a send does, with Citus's remote commands logged, and reports
// whether Citus prepared the worker's part (2PC) or committed it in one phase.
func measureOnePhase(t *testing.T, url, schema string) {
	t.Helper()
	ctx := t.Context()
	var remote []string
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	cfg.OnNotice = func(_ *pgconn.PgConn, n *pgconn.Notice) { remote = append(remote, n.Message) }
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close(context.Background()) }()
	probe := pgx.Identifier{schema, "citus_probe"}.Sanitize()
	if _, err := conn.Exec(ctx, "CREATE TABLE "+probe+" (id int)"); err != nil {
		t.Fatal(err)
	}
	defer func() { _, _ = conn.Exec(context.Background(), "DROP TABLE "+probe) }()
	var before, after int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_dist_transaction`).Scan(&before); err != nil {
		t.Fatal(err)
	}
	err = pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SET LOCAL citus.log_remote_commands = on"); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, "INSERT INTO "+probe+" VALUES (1)"); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO river.river_job (kind, max_attempts, args, scheduled_at)
			VALUES ('citus_probe', 1, '{}', now() + interval '1 year')`)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `DELETE FROM river.river_job WHERE kind = 'citus_probe'`); err != nil {
		t.Fatal(err)
	}
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_dist_transaction`).Scan(&after); err != nil {
		t.Fatal(err)
	}
	var prepared, committed int
	for _, m := range remote {
		switch {
		case strings.Contains(m, "PREPARE TRANSACTION"):
			prepared++
		case strings.HasSuffix(m, "issuing COMMIT"):
			committed++
		}
	}
	t.Logf("a transaction writing %s (a worker) and river.river_job (the coordinator): %d PREPARE TRANSACTION, "+
		"%d one-phase COMMIT sent to the worker, %d new pg_dist_transaction records; remote commands: %q",
		schema, prepared, committed, after-before, remote)
}
