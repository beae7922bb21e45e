package integration

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// citusMove is TestCitusSchemaMove's bundle: a cluster database, the
// in-process service (no workers) that registers the organization, one api
// and one worker process of the built binary, and the organization with
// its sender number, recipients and webhook receiver.
type citusMove struct {
	*msgEnv
	org        *Org
	sid        int64
	recipients []string
	rcv        *receiver
	api        string
	env        map[string]string
}

// setupCitusMove starts the cluster and the processes.
func setupCitusMove(t *testing.T) *citusMove {
	t.Helper()
	url := startCitusCluster(t).createdb(t)
	e := startMsg(t, Options{DatabaseURL: url, Env: map[string]string{"WEBHOOK_ALLOW_PRIVATE": "true"}})
	s := &citusMove{msgEnv: e, org: e.Register(t)}
	for i := range 20 {
		s.recipients = append(s.recipients, phoneN(100+i))
		e.recipient(s.recipients[i])
	}
	s.sid, s.rcv = citusStreamOrg(t, e, s.org, phoneN(1))
	s.api, s.env, _ = startCitusProcesses(t, url)
	return s
}

// citusStreamOrg readies org for a steady stream of sends: an active
// sender number (phone), API and sender rates well above the stream's,
// and a webhook endpoint on a local receiver that hears message.delivered.
func citusStreamOrg(t *testing.T, e *msgEnv, org *Org, phone string) (int64, *receiver) {
	t.Helper()
	sid := e.activeSender(org, phone)
	if _, err := e.App.DB.Pool.Exec(t.Context(), `UPDATE central.organizations
		SET api_rate_limit = 10000, api_rate_burst = 10000, sender_rate = 100, sender_burst = 100 WHERE id = $1`, org.ID); err != nil {
		t.Fatal(err)
	}
	rcv := newReceiver(t)
	createWebhook(t, e.Env, org.Key(), map[string]any{"url": rcv.srv.URL + "/in", "events": []string{"message.delivered"}})
	return sid, rcv
}

// startCitusProcesses starts an api process and a worker process of the
// built binary on the cluster database at url, and returns the api's base
// URL, the processes' environment and the api process.
func startCitusProcesses(t *testing.T, url string) (string, map[string]string, *platformProc) {
	t.Helper()
	env := map[string]string{
		"DATABASE_URL": url, "DB_MAX_CONNS": "6", "LOG_LEVEL": "warn", "WEBHOOK_ALLOW_PRIVATE": "true",
		"JWT_SECRET": strings.Repeat("j", 32), "API_KEY_PEPPER": strings.Repeat("p", 32),
	}
	addr := freeAddr(t)
	apiEnv := maps.Clone(env)
	apiEnv["HTTP_ADDR"] = addr
	api := startPlatform(t, "api", "api", apiEnv)
	if !waitReady(t, "http://"+addr+"/readyz", 30*time.Second) {
		t.Fatal("the api process did not get ready")
	}
	startPlatform(t, "worker", "worker", env)
	return "http://" + addr, env, api
}

// admin runs `platform admin citus <args>` with the processes' environment
// and returns its output and error.
func (s *citusMove) admin(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), platformBinary(t), append([]string{"admin", "citus"}, args...)...)
	cmd.Env = os.Environ()
	for k, v := range s.env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	out, err := cmd.Output()
	if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
		return string(out), fmt.Errorf("%w: %s", err, ee.Stderr)
	}
	return string(out), err
}

// node is where `platform admin citus where --json` says the
// organization's schema lives.
func (s *citusMove) node(t *testing.T) string {
	t.Helper()
	out, err := s.admin(t, "where", "--json")
	if err != nil {
		t.Fatalf("admin citus where: %v", err)
	}
	var placed []struct {
		Org         int64  `json:"organization_id"`
		Schema      string `json:"schema"`
		Distributed bool   `json:"distributed"`
		Node        string `json:"node"`
	}
	if err := json.Unmarshal([]byte(out), &placed); err != nil {
		t.Fatalf("admin citus where --json: %v: %q", err, out)
	}
	for _, p := range placed {
		if p.Org == s.org.ID {
			if !p.Distributed || p.Schema != s.org.Tenant.Schema || p.Node == "" {
				t.Fatalf("admin citus where: %+v", p)
			}
			return p.Node
		}
	}
	t.Fatalf("admin citus where lists no organization %d: %q", s.org.ID, out)
	return ""
}

// sendResult is one send of the steady stream.
type sendResult struct {
	id       int64
	at, took time.Duration // its start after the stream's, and its latency
	tries    int           // attempts: more than 1 after a 503
}

// docs/scaling.md, §Rebalancing: an organization's tenant schema moves to
// the other worker (platform admin citus move) while the organization
// sends 50 messages a second (500 in all) through an api process and a worker process
// delivers them. Every send is accepted without a 5xx, every accepted
// message is delivered exactly once (the network holds each reference
// once), its message.delivered webhook is heard once, the schema is on the
// other worker afterwards and its job outbox is empty. It logs how long
// the move took and the sends' latencies during it.
func TestCitusSchemaMove(t *testing.T) {
	t.Parallel()
	s := setupCitusMove(t)
	from := s.node(t)
	var workers []string
	rows, err := s.App.DB.Pool.Query(t.Context(), `SELECT nodename || ':' || nodeport FROM pg_dist_node WHERE groupid <> 0 ORDER BY nodeid`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		workers = append(workers, n)
	}
	if len(workers) != 2 || !slices.Contains(workers, from) {
		t.Fatalf("workers %v, the schema on %s", workers, from)
	}
	to := workers[0]
	if to == from {
		to = workers[1]
	}

	// The command's refusals.
	org := fmt.Sprint(s.org.ID)
	for _, tc := range []struct {
		node, org, want string
	}{
		{to, "999999", "no organization 999999"},
		{from, org, s.org.Tenant.Schema + " (organization " + org + ") is on " + from + " already"},
		{"127.0.0.1:1", org, "node 127.0.0.1:1 is not an active node of the cluster (workers: "},
		{"nowhere", org, `node "nowhere": want host:port`},
	} {
		if _, err := s.admin(t, "move", "--org", tc.org, "--node", tc.node); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Fatalf("admin citus move --org %s --node %s: %v, want %q", tc.org, tc.node, err, tc.want)
		}
	}

	// 50 sends a second for 10 s; a 503 is retried by the client after
	// 100 ms, up to 50 times.
	const rate, total = 50, 500
	var (
		mu      sync.Mutex
		results []sendResult
		bad     []string
		// unavailable holds when each 503 came, after the stream's start.
		unavailable []time.Duration
		wg          sync.WaitGroup
	)
	start := time.Now()
	tick := time.NewTicker(time.Second / rate)
	defer tick.Stop()
	moved := make(chan string, 1)
	var moveAt, moveEnd time.Duration
	for i := range total {
		<-tick.C
		if i == total/4 {
			go func() {
				mu.Lock()
				moveAt = time.Since(start)
				mu.Unlock()
				out, err := s.admin(t, "move", "--org", fmt.Sprint(s.org.ID), "--node", to, "--json")
				mu.Lock()
				moveEnd = time.Since(start)
				mu.Unlock()
				if err != nil {
					out = "error: " + err.Error()
				}
				moved <- out
			}()
		}
		wg.Go(func() {
			r := sendResult{at: time.Since(start)}
			for {
				r.tries++
				resp, err := SendTo(t, http.DefaultClient, s.api, Request{Method: http.MethodPost, Path: messagesPath,
					Header: s.org.Key(), Body: text(s.sid, s.recipients[i%len(s.recipients)], fmt.Sprintf("message %d", i))})
				mu.Lock()
				switch {
				case err != nil:
					bad = append(bad, fmt.Sprintf("send %d: %v", i, err))
				case resp.Status == http.StatusServiceUnavailable && r.tries < 50 &&
					strings.Contains(string(resp.Body), `"code":"service_unavailable"`):
					unavailable = append(unavailable, time.Since(start))
					mu.Unlock()
					<-time.After(100 * time.Millisecond)
					continue
				case resp.Status != http.StatusAccepted:
					bad = append(bad, fmt.Sprintf("send %d: %d %s", i, resp.Status, resp.Body))
				default:
					var body struct {
						Data message `json:"data"`
					}
					if err := json.Unmarshal(resp.Body, &body); err != nil {
						bad = append(bad, fmt.Sprintf("send %d: %v", i, err))
					}
					r.id, r.took = body.Data.ID, time.Since(start)-r.at
					results = append(results, r)
				}
				mu.Unlock()
				return
			}
		})
	}
	wg.Wait()
	out := <-moved
	var mv struct {
		From, To string
		Took     time.Duration `json:"took_ns"`
	}
	if err := json.Unmarshal([]byte(out), &mv); err != nil || mv.From != from || mv.To != to {
		t.Fatalf("admin citus move: %q (%v), want from %s to %s", out, err, from, to)
	}
	if got := s.node(t); got != to {
		t.Fatalf("after the move the schema is on %s, want %s", got, to)
	}

	// Sends during the move, their latencies, and the longest.
	var during, retried int
	var slowest, slowestAt time.Duration
	var tooks []time.Duration
	for _, r := range results {
		if r.at+r.took >= moveAt && r.at <= moveEnd {
			during++
			tooks = append(tooks, r.took)
		}
		if r.tries > 1 {
			retried++
		}
		if r.took > slowest {
			slowest, slowestAt = r.took, r.at
		}
	}
	slices.Sort(tooks)
	var p50, longest time.Duration
	if len(tooks) > 0 {
		p50, longest = tooks[len(tooks)/2], tooks[len(tooks)-1]
	}
	t.Logf("move: %s (command %s, from %s to %s after %s of sending); %d sends overlapped it, latency p50 %s, max %s; "+
		"slowest send of all %s, started at %s; %d sends in %s",
		mv.Took.Round(time.Millisecond), (moveEnd - moveAt).Round(time.Millisecond), from, to, moveAt.Round(time.Millisecond),
		during, p50.Round(time.Millisecond), longest.Round(time.Millisecond), slowest.Round(time.Millisecond),
		slowestAt.Round(time.Millisecond), len(results), time.Since(start).Round(time.Millisecond))
	if len(unavailable) > 0 {
		slices.Sort(unavailable)
		t.Logf("%d answers were 503 service_unavailable (%d sends retried by the client, all then accepted), "+
			"from %s to %s after the move's end", len(unavailable), retried,
			(unavailable[0] - moveEnd).Round(time.Millisecond), (unavailable[len(unavailable)-1] - moveEnd).Round(time.Millisecond))
	}
	if len(bad) > 0 {
		t.Fatalf("%d sends failed or were refused: %q", len(bad), bad)
	}
	if len(results) != total || during == 0 {
		t.Fatalf("%d of %d sends accepted, %d during the move", len(results), total, during)
	}

	// Exactly once: every accepted message delivered, the network holds each
	// of them once, the endpoint heard each message.delivered once.
	s.waitCounts(s.org, 45*time.Second, fmt.Sprintf("all %d messages delivered", total),
		func(c map[string]int) bool { return c["delivered"] == total })
	if got := s.networkMessages(s.org); got != total {
		t.Fatalf("the network holds %d messages for %d accepted", got, total)
	}
	var refs int
	if err := s.App.DB.Pool.QueryRow(t.Context(), `SELECT count(DISTINCT reference) FROM network.messages WHERE reference LIKE $1 || ':%'`,
		s.org.Tenant.Schema).Scan(&refs); err != nil || refs != total {
		t.Fatalf("%d distinct references on the network (%v), want %d", refs, err, total)
	}
	s.requireNetworkIDs(s.org)
	// A delivered message's event is expanded into its webhook delivery
	// after the receipt's commit: wait for all of them to be heard.
	s.rcv.until(t, total, fmt.Sprintf("%d message.delivered", total))
	citusExactlyOnce(t, s.msgEnv, []*citusOrg{{org: s.org, rcv: s.rcv}})
	if hooks := s.rcv.hooks(); len(hooks) != total {
		t.Fatalf("the endpoint heard %d requests, want %d message.delivered", len(hooks), total)
	}
	// A move commits its delete after River's insert: the last job may run
	// a moment before its row goes.
	poll(t, 5*time.Second, func() (bool, string) {
		var left int
		if err := s.App.DB.Pool.QueryRow(t.Context(), `SELECT count(*) FROM `+s.org.Tenant.Table("job_outbox")).Scan(&left); err != nil {
			t.Fatal(err)
		}
		return left == 0, fmt.Sprintf("%d job outbox rows left: want every job moved into River", left)
	})
}
