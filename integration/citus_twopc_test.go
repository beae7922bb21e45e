package integration

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bizmsg/platform/platform/audit"
)

// citusOptOuts, for each organization on its distributed schema: a phone
// put on the opt-out list and taken off it through the API, another
// through the dashboard, each change's audit entry (a coordinator table)
// in the log when its request has answered, written through the tenant's
// job outbox (docs/scaling.md, §Jobs: Coordinator writes) rather than in
// the tenant's transaction, which measureSpanning checks.
func citusOptOuts(t *testing.T, e *msgEnv, runs []*citusOrg) {
	t.Helper()
	for i, r := range runs {
		byAPI, byWeb := phoneN(300+i), phoneN(400+i)
		if resp := e.Do(Request{Method: http.MethodPost, Path: optOutsPath, Header: r.org.Key(),
			Body: map[string]any{"phone": byAPI}}); resp.Status != http.StatusCreated {
			t.Fatalf("%s: add an opt-out through the API = %d %s", r.org.Name, resp.Status, resp.Body)
		}
		if resp := e.Do(Request{Method: http.MethodDelete, Path: optOutsPath + "/" + url.PathEscape(byAPI),
			Header: r.org.Key()}); resp.Status != http.StatusNoContent {
			t.Fatalf("%s: remove an opt-out through the API = %d %s", r.org.Name, resp.Status, resp.Body)
		}
		w := newWebClient(t, e.Env)
		wantPage(t, w.login(r.org.OwnerEmail, r.org.OwnerPassword), http.StatusSeeOther)
		token := w.csrf("/opt-outs")
		if resp := w.post("/opt-outs", url.Values{"csrf_token": {token}, "phone": {byWeb}}); resp.Status != http.StatusSeeOther {
			t.Fatalf("%s: add an opt-out on the dashboard = %d %.300s", r.org.Name, resp.Status, resp.Body)
		}
		wantRedirect(t, w.post("/opt-outs/remove", url.Values{"csrf_token": {token}, "phone": {byWeb}}), "/opt-outs?ok=opt_out_removed")
		rows, err := e.App.DB.Pool.Query(t.Context(), `SELECT action || ' ' || (details->>'phone') FROM central.audit_log
			WHERE organization_id = $1 AND action LIKE 'opt\_out.%' ORDER BY id`, r.org.ID)
		if err != nil {
			t.Fatal(err)
		}
		got, err := pgx.CollectRows(rows, pgx.RowTo[string])
		want := []string{audit.ActionOptOutAdd + " " + byAPI, audit.ActionOptOutRemove + " " + byAPI,
			audit.ActionOptOutAdd + " " + byWeb, audit.ActionOptOutRemove + " " + byWeb}
		if err != nil || strings.Join(got, ",") != strings.Join(want, ",") {
			t.Fatalf("%s's opt-out audit entries: %q (%v), want %q", r.org.Name, got, err, want)
		}
	}
}

// twoPCSource is what made a transaction a two-phase commit: the first
// of its statements that sent Citus's remote commands to more than one
// node or copied rows to a node (COPY: an INSERT ... SELECT that Citus
// plans through the coordinator, committed in two phases even on one
// worker), its text shortened and its tenant schema written tenant_N.
type twoPCSource struct {
	statement string
	records   int
}

// twoPCSources reads the coordinator's statement log (citus.log_remote_commands,
// the virtual transaction id in each line) and returns, for each
// transaction Citus committed in two phases, its source and its
// pg_dist_transaction records (one per PREPARE TRANSACTION), by virtual
// transaction id.
func twoPCSources(t *testing.T, c *citusCluster, database string) map[string]*twoPCSource {
	t.Helper()
	f, err := os.Open(c.coordinatorLog())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	type stmt struct {
		text  strings.Builder
		nodes map[string]bool
		copy  bool
	}
	current := map[string]*stmt{}        // by vxid: its statement running
	pending := map[string][2]string{}    // by pid: the remote command whose node the next line names
	sources := map[string]*twoPCSource{} // by vxid
	culprit := map[string]string{}       // by vxid: its first culprit statement
	var open *stmt                       // the statement whose text continues on the next lines
	tenant := regexp.MustCompile(`tenant_\d+`)
	pidOf := regexp.MustCompile(`\[(\d+)\]`)
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		line := sc.Text()
		m := logEntry.FindStringSubmatch(line)
		if m == nil {
			if open != nil && open.text.Len() < 400 {
				open.text.WriteString(" " + line)
			}
			continue
		}
		open = nil
		if m[1] == "" || m[2] != database {
			continue
		}
		vxid, rest, pid := m[1], m[3], pidOf.FindStringSubmatch(line)[1]
		switch {
		case strings.HasPrefix(rest, "LOG:  statement: ") || strings.HasPrefix(rest, "LOG:  execute "):
			_, text, _ := strings.Cut(rest, ": ")
			_, text, _ = strings.Cut(text, ": ")
			open = &stmt{nodes: map[string]bool{}}
			open.text.WriteString(text)
			current[vxid] = open
		case strings.HasPrefix(rest, "NOTICE:  issuing PREPARE TRANSACTION"):
			if sources[vxid] == nil {
				sources[vxid] = &twoPCSource{}
			}
			sources[vxid].records++
		case strings.HasPrefix(rest, "NOTICE:  issuing "):
			pending[pid] = [2]string{vxid, strings.TrimPrefix(rest, "NOTICE:  issuing ")}
		case strings.HasPrefix(rest, "DETAIL:  on server "):
			p, ok := pending[pid]
			delete(pending, pid)
			s := current[p[0]]
			if !ok || s == nil {
				continue
			}
			s.nodes[strings.Fields(strings.TrimPrefix(rest, "DETAIL:  on server "))[0]] = true
			s.copy = s.copy || strings.HasPrefix(p[1], "COPY ")
			if _, seen := culprit[p[0]]; !seen && (len(s.nodes) > 1 || s.copy) {
				culprit[p[0]] = tenant.ReplaceAllString(strings.Join(strings.Fields(s.text.String()), " "), "tenant_N")
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	for vxid, s := range sources {
		s.statement = culprit[vxid]
	}
	return sources
}

// provisioning reports whether a two-phase commit's source is an
// organization's provisioning or the migrations' DDL, which is
// propagated to every node (docs/scaling.md, §Measured): the schemas'
// creation (CREATE SCHEMA, the migrations' CREATE, ALTER and DROP, whose
// text may begin with their comment) and a tenant schema's distribution
// (citus_schema_distribute, in the transaction that registers the
// organization, and the foreign keys it adds after), and the test's own
// probe table.
func provisioning(source string) bool {
	for _, p := range []string{"CREATE ", "ALTER ", "DROP ", "COMMENT ", "-- ", "SELECT citus_schema_distribute("} {
		if strings.HasPrefix(source, p) {
			return true
		}
	}
	return false
}

// checkTwoPC fails the test on a two-phase commit that is not
// provisioning's, and logs the records by source. Every other statement
// of the lifecycle is a router plan on the tenant's node, committed in one
// phase (docs/scaling.md, §Two-phase commits).
func checkTwoPC(t *testing.T, c *citusCluster, url string, before int, pool interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}) {
	t.Helper()
	by, unexpected := map[string]int{}, map[string]int{}
	records := 0
	for _, s := range twoPCSources(t, c, dbName(t, url)) {
		records += s.records
		key := s.statement
		if len(key) > 100 {
			key = key[:100]
		}
		by[key] += s.records
		if !provisioning(s.statement) {
			unexpected[key] += s.records
		}
	}
	var held int
	if err := pool.QueryRow(t.Context(), `SELECT count(*) FROM pg_dist_transaction`).Scan(&held); err != nil {
		t.Fatal(err)
	}
	t.Logf("pg_dist_transaction records by the statement that made their transaction two-phase (%d in the log, %d held "+
		"since the log began): %v", records, held-before, by)
	if records != held-before {
		t.Errorf("the log shows %d PREPARE TRANSACTION, pg_dist_transaction holds %d more: the attribution misses some",
			records, held-before)
	}
	if len(unexpected) > 0 {
		t.Fatalf("two-phase commits after provisioning (records by statement): %v", unexpected)
	}
}

// twoPCCount is how many records pg_dist_transaction holds in the database
// at url.
func twoPCCount(t *testing.T, url string) int {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close(context.Background()) }()
	var n int
	if err := conn.QueryRow(t.Context(), `SELECT count(*) FROM pg_dist_transaction`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// citusRedeliveries, for each organization once its events are delivered:
// its first delivery redelivered (a new delivery of the same event, heard
// once more) and its failed ones since an hour ago (none), so that
// checkTwoPC covers their statements.
func citusRedeliveries(t *testing.T, e *msgEnv, runs []*citusOrg) {
	t.Helper()
	for _, r := range runs {
		var first int64
		if err := e.App.DB.Pool.QueryRow(t.Context(), `SELECT min(id) FROM `+r.org.Tenant.Table("webhook_deliveries")).Scan(&first); err != nil {
			t.Fatal(err)
		}
		heard := len(r.rcv.hooks())
		path := fmt.Sprintf("/api/v1/webhooks/%d/deliveries", r.hook.ID)
		if resp := e.Do(Request{Method: http.MethodPost, Path: fmt.Sprintf("%s/%d/redeliver", path, first),
			Header: r.org.Key()}); resp.Status != http.StatusAccepted {
			t.Fatalf("%s: redeliver = %d %s", r.org.Name, resp.Status, resp.Body)
		}
		since := time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)
		if resp := e.Do(Request{Method: http.MethodPost, Path: path + "/redeliver", Header: r.org.Key(),
			Body: map[string]any{"since": since}}); resp.Status != http.StatusAccepted {
			t.Fatalf("%s: redeliver the failed = %d %s", r.org.Name, resp.Status, resp.Body)
		}
		poll(t, 30*time.Second, func() (bool, string) {
			n := len(r.rcv.hooks())
			return n == heard+1, fmt.Sprintf("%s's endpoint heard %d requests, want %d after the redelivery", r.org.Name, n, heard+1)
		})
	}
}
