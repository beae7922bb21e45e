package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Helpers of the campaign tests that run the built binary
// (campaign_fault_test.go, campaign_fairness_test.go): the processes, a
// client of the campaign API of docs/api.md (§Campaigns) against the api
// process, and the network's view of what was delivered. Their names
// start with camp so that they never meet the in-process helpers of
// campaigns_test.go.

// campAPI is the campaigns' path.
const campAPI = "/api/v1/campaigns"

// campProcs is one `platform api` process and `platform worker` processes
// of the built binary on one database.
type campProcs struct {
	t *testing.T
	// env is every process's environment.
	env map[string]string
	api *platformProc
	// base is the api process's base URL.
	base    string
	workers []*platformProc
	// started counts the worker processes started, for their names.
	started int
}

// startCampProcs starts the api process and workers worker processes on
// dbURL with settings added to their environment, and waits until the api
// is ready and every worker has started its River workers.
func startCampProcs(t *testing.T, dbURL string, workers int, settings map[string]string) *campProcs {
	t.Helper()
	env := map[string]string{
		"DATABASE_URL": dbURL, "DB_MAX_CONNS": "4", "LOG_LEVEL": "info",
		"JWT_SECRET": strings.Repeat("j", 32), "API_KEY_PEPPER": strings.Repeat("p", 32),
		"API_RATE_LIMIT": "1000000", "API_RATE_BURST": "1000000",
		"SHUTDOWN_TIMEOUT": "10s", "DB_CONNECT_TIMEOUT": "60s",
		"OPS_USER": "", "OPS_PASSWORD": "", "PPROF_ADDR": "", "PLATFORM_ENV": "development",
	}
	for k, v := range settings {
		env[k] = v
	}
	p := &campProcs{t: t, env: env}
	addr := freeAddr(t)
	apiEnv := map[string]string{"HTTP_ADDR": addr}
	for k, v := range env {
		apiEnv[k] = v
	}
	p.api = startPlatform(t, "api", "api", apiEnv)
	p.base = "http://" + addr
	for range workers {
		p.workers = append(p.workers, p.startWorker())
	}
	if !waitReady(t, p.base+"/readyz", 60*time.Second) {
		p.api.MustBeRunning()
		t.Fatal("the api process was not ready within 60s")
	}
	for _, w := range p.workers {
		p.waitWorker(w)
	}
	return p
}

// startWorker starts one more worker process (without waiting for it).
func (p *campProcs) startWorker() *platformProc {
	p.started++
	return startPlatform(p.t, fmt.Sprintf("worker-%d", p.started), "worker", p.env)
}

// waitWorker waits until w has started its River workers.
func (p *campProcs) waitWorker(w *platformProc) {
	p.t.Helper()
	if !w.WaitLog(`"msg":"workers started"`, 60*time.Second) {
		w.MustBeRunning()
		p.t.Fatalf("%s did not start its workers within 60s", w.name)
	}
}

// kill kills worker i with SIGKILL, as a crash or an OOM kill would, and
// waits until it is gone.
func (p *campProcs) kill(i int) {
	p.t.Helper()
	w := p.workers[i]
	w.Signal(syscall.SIGKILL)
	if err := w.WaitExit(10 * time.Second); err == nil {
		p.t.Fatalf("%s exited 0 after SIGKILL", w.name)
	}
}

// replace starts a new worker in worker i's place (after kill).
func (p *campProcs) replace(i int) *platformProc {
	p.workers[i] = p.startWorker()
	return p.workers[i]
}

// stopAll stops every running process with SIGTERM and fails the test
// unless each exits 0, and if any logged a panic.
func (p *campProcs) stopAll() {
	p.t.Helper()
	for _, w := range append([]*platformProc{p.api}, p.workers...) {
		w.MustBeRunning()
		w.Stop(30 * time.Second)
		if strings.Contains(w.Log(), "panic") {
			p.t.Errorf("%s logged a panic", w.name)
		}
	}
}

// campClient calls the Tenant API of the api process with an
// organization's key. Its methods fail the test on a transport error, so
// they belong to the test's goroutine.
type campClient struct {
	t      *testing.T
	base   string
	key    map[string]string
	client *http.Client
}

// newCampClient is a client of the service at base with org's key.
func newCampClient(t *testing.T, base string, org *Org) *campClient {
	return &campClient{t: t, base: base, key: org.Key(), client: &http.Client{Timeout: 60 * time.Second}}
}

// do sends a request with the key (and header) and returns the answer.
func (c *campClient) do(method, path string, body any, header map[string]string) *Response {
	c.t.Helper()
	h := map[string]string{}
	for k, v := range c.key {
		h[k] = v
	}
	for k, v := range header {
		h[k] = v
	}
	r, err := SendTo(c.t, c.client, c.base, Request{Method: method, Path: path, Header: h, Body: body})
	if err != nil {
		c.t.Fatal(err)
	}
	return r
}

// campView is what the campaign tests read of a campaign.
type campView struct {
	ID          int64          `json:"id"`
	Status      string         `json:"status"`
	Counts      map[string]int `json:"counts"`
	SkipReasons map[string]int `json:"skip_reasons"`
}

// released is how many recipients the campaign has released or skipped:
// every one but the pending.
func (v campView) released() int { return v.Counts["total"] - v.Counts["pending"] }

// campRecipient is one recipient of GET /campaigns/{id}/recipients.
type campRecipient struct {
	Phone          string  `json:"phone"`
	Status         string  `json:"status"`
	MessageID      *int64  `json:"message_id"`
	SenderNumberID *int64  `json:"sender_number_id"`
	ErrorCode      *string `json:"error_code"`
}

// campAdded is the answer of POST /campaigns/{id}/recipients.
type campAdded struct {
	Added      int `json:"added"`
	Duplicates int `json:"duplicates"`
	Invalid    []struct {
		Row   int    `json:"row"`
		Phone string `json:"phone"`
		Error string `json:"error"`
	} `json:"invalid"`
}

// data decodes the body's "data" into v after checking the status.
func (c *campClient) data(r *Response, status int, what string, v any) {
	c.t.Helper()
	if r.Status != status {
		c.t.Fatalf("%s = %d %s, want %d", what, r.Status, r.Body, status)
	}
	var body struct {
		Data json.RawMessage `json:"data"`
	}
	r.JSON(c.t, &body)
	if err := json.Unmarshal(body.Data, v); err != nil {
		c.t.Fatalf("%s: decode %s: %v", what, body.Data, err)
	}
}

// create creates a campaign (a draft).
func (c *campClient) create(body map[string]any) campView {
	c.t.Helper()
	var v campView
	c.data(c.do(http.MethodPost, campAPI, body, nil), http.StatusCreated, "create campaign", &v)
	if v.Status != "draft" {
		c.t.Fatalf("a new campaign is %s, want draft", v.Status)
	}
	return v
}

// addJSON adds recipients as a JSON array.
func (c *campClient) addJSON(id int64, rows []map[string]any) campAdded {
	c.t.Helper()
	var a campAdded
	c.data(c.do(http.MethodPost, fmt.Sprintf("%s/%d/recipients", campAPI, id), rows, nil), http.StatusOK, "add recipients (JSON)", &a)
	return a
}

// addCSV adds recipients as text/csv.
func (c *campClient) addCSV(id int64, csv string) campAdded {
	c.t.Helper()
	var a campAdded
	c.data(c.do(http.MethodPost, fmt.Sprintf("%s/%d/recipients", campAPI, id), csv, map[string]string{"Content-Type": "text/csv"}),
		http.StatusOK, "add recipients (CSV)", &a)
	return a
}

// action posts start, pause, resume or cancel and returns the campaign.
func (c *campClient) action(id int64, action string) campView {
	c.t.Helper()
	var v campView
	c.data(c.do(http.MethodPost, fmt.Sprintf("%s/%d/%s", campAPI, id, action), nil, nil), http.StatusOK, action+" campaign", &v)
	return v
}

// get reads the campaign.
func (c *campClient) get(id int64) campView {
	c.t.Helper()
	var v campView
	c.data(c.do(http.MethodGet, fmt.Sprintf("%s/%d", campAPI, id), nil, nil), http.StatusOK, "get campaign", &v)
	return v
}

// wait polls the campaign until cond holds, failing the test after
// timeout with what and the campaign's last state.
func (c *campClient) wait(id int64, timeout time.Duration, what string, cond func(campView) bool) campView {
	c.t.Helper()
	var v campView
	poll(c.t, timeout, func() (bool, string) {
		v = c.get(id)
		return cond(v), fmt.Sprintf("waiting for %s; campaign %s, counts %v, skip reasons %v", what, v.Status, v.Counts, v.SkipReasons)
	})
	return v
}

// recipients lists every recipient of the campaign with status ("" for
// all), page by page.
func (c *campClient) recipients(id int64, status string) []campRecipient {
	c.t.Helper()
	var out []campRecipient
	q := url.Values{"limit": {"100"}}
	if status != "" {
		q.Set("status", status)
	}
	for {
		r := c.do(http.MethodGet, fmt.Sprintf("%s/%d/recipients?%s", campAPI, id, q.Encode()), nil, nil)
		if r.Status != http.StatusOK {
			c.t.Fatalf("list recipients = %d %s", r.Status, r.Body)
		}
		var page struct {
			Data       []campRecipient `json:"data"`
			NextCursor *string         `json:"next_cursor"`
		}
		r.JSON(c.t, &page)
		out = append(out, page.Data...)
		if page.NextCursor == nil {
			return out
		}
		q.Set("cursor", *page.NextCursor)
	}
}

// campaignMessages lists every message of the campaign through GET
// /api/v1/messages?campaign_id=, page by page.
func (c *campClient) campaignMessages(id int64) []message {
	c.t.Helper()
	var out []message
	q := url.Values{"limit": {"100"}, "campaign_id": {fmt.Sprint(id)}}
	for {
		r := c.do(http.MethodGet, messagesPath+"?"+q.Encode(), nil, nil)
		if r.Status != http.StatusOK {
			c.t.Fatalf("list the campaign's messages = %d %s", r.Status, r.Body)
		}
		var page struct {
			Data       []message `json:"data"`
			NextCursor *string   `json:"next_cursor"`
		}
		r.JSON(c.t, &page)
		out = append(out, page.Data...)
		if page.NextCursor == nil {
			return out
		}
		q.Set("cursor", *page.NextCursor)
	}
}

// optOut opts phone out of the organization (POST /api/v1/opt-outs).
func (c *campClient) optOut(phone string) {
	c.t.Helper()
	if r := c.do(http.MethodPost, "/api/v1/opt-outs", map[string]any{"phone": phone}, nil); r.Status != http.StatusCreated {
		c.t.Fatalf("opt out %s = %d %s", phone, r.Status, r.Body)
	}
}

// bulkPhone is the i-th phone of a campaign's audience (New York,
// exchanges 200 and up: 100,000 valid numbers apart from phoneN's).
func bulkPhone(i int) string { return fmt.Sprintf("+1212%07d", 2000000+i) }

// bulkAccounts creates reachable network accounts (verified, receiving)
// for bulkPhone(i) of every i in is, in one COPY.
func (e *msgEnv) bulkAccounts(is []int) {
	e.t.Helper()
	rows := make([][]any, 0, len(is))
	now := time.Now()
	for _, i := range is {
		rows = append(rows, []any{bulkPhone(i), now, now})
	}
	if _, err := e.App.DB.Pool.CopyFrom(context.Background(), pgx.Identifier{"network", "accounts"},
		[]string{"phone", "verified_at", "phone_verified_at"}, pgx.CopyFromRows(rows)); err != nil {
		e.t.Fatalf("network accounts: %v", err)
	}
}

// bulkAudience creates reachable accounts for the first n bulkPhones and
// returns them as a campaign's JSON recipient rows, in order.
func (e *msgEnv) bulkAudience(n int) []map[string]any {
	e.t.Helper()
	is := make([]int, n)
	rows := make([]map[string]any, n)
	for i := range n {
		is[i], rows[i] = i, map[string]any{"phone": bulkPhone(i)}
	}
	e.bulkAccounts(is)
	return rows
}

// networkFrom counts the network's messages sent from the phones.
func (e *msgEnv) networkFrom(senders []string) int {
	e.t.Helper()
	var n int
	if err := e.App.DB.Pool.QueryRow(context.Background(), `SELECT count(*) FROM network.messages m
		JOIN network.accounts f ON f.id = m.from_account_id WHERE f.phone = ANY($1)`, senders).Scan(&n); err != nil {
		e.t.Fatalf("count the network's messages: %v", err)
	}
	return n
}

// networkByRecipient counts the network's messages sent from the phones
// by recipient phone.
func (e *msgEnv) networkByRecipient(senders []string) map[string]int {
	e.t.Helper()
	rows, err := e.App.DB.Pool.Query(context.Background(), `SELECT t.phone, count(*) FROM network.messages m
		JOIN network.accounts f ON f.id = m.from_account_id
		JOIN network.accounts t ON t.id = m.to_account_id
		WHERE f.phone = ANY($1) GROUP BY t.phone`, senders)
	if err != nil {
		e.t.Fatalf("the network's messages by recipient: %v", err)
	}
	out := map[string]int{}
	for rows.Next() {
		var p string
		var n int
		if err := rows.Scan(&p, &n); err != nil {
			e.t.Fatal(err)
		}
		out[p] = n
	}
	if err := rows.Err(); err != nil {
		e.t.Fatal(err)
	}
	return out
}

// acceptedToNetwork returns, for each of the organization's messages
// ids that the network holds, the time from its acceptance (the message's
// created_at, stamped by the api process as it accepted it, before the
// commit its 202 reports) to the network's taking it
// (network.messages.created_at, stamped by the delivering worker). Both
// are read from the database, so the client's own delays (a 202 that
// reaches it after the delivery) are not in it.
func (e *msgEnv) acceptedToNetwork(org *Org, ids []int64) map[int64]time.Duration {
	e.t.Helper()
	rows, err := e.App.DB.Pool.Query(context.Background(), `SELECT m.id, n.created_at - m.created_at
		FROM `+org.Tenant.Table("messages")+` m JOIN network.messages n ON n.reference = $1 || ':' || m.id
		WHERE m.id = ANY($2)`, org.Tenant.Schema, ids)
	if err != nil {
		e.t.Fatalf("acceptance to network: %v", err)
	}
	out := make(map[int64]time.Duration, len(ids))
	for rows.Next() {
		var id int64
		var d time.Duration
		if err := rows.Scan(&id, &d); err != nil {
			e.t.Fatal(err)
		}
		out[id] = d
	}
	if err := rows.Err(); err != nil {
		e.t.Fatal(err)
	}
	return out
}

// networkTimes returns when the network took each of the organization's
// messages ids (network.messages.created_at, stamped by the delivering
// worker process's clock), by message id; a message the network does not
// hold is missing.
func (e *msgEnv) networkTimes(org *Org, ids []int64) map[int64]time.Time {
	e.t.Helper()
	refs := make([]string, len(ids))
	for i, id := range ids {
		refs[i] = fmt.Sprintf("%s:%d", org.Tenant.Schema, id)
	}
	rows, err := e.App.DB.Pool.Query(context.Background(),
		`SELECT reference, created_at FROM network.messages WHERE reference = ANY($1)`, refs)
	if err != nil {
		e.t.Fatalf("the network's times: %v", err)
	}
	out := make(map[int64]time.Time, len(ids))
	for rows.Next() {
		var ref string
		var at time.Time
		if err := rows.Scan(&ref, &at); err != nil {
			e.t.Fatal(err)
		}
		var id int64
		if _, err := fmt.Sscanf(ref[len(org.Tenant.Schema)+1:], "%d", &id); err != nil {
			e.t.Fatalf("reference %q: %v", ref, err)
		}
		out[id] = at
	}
	if err := rows.Err(); err != nil {
		e.t.Fatal(err)
	}
	return out
}

// quantile is the p-quantile (0..1) of ds by the nearest-rank method; ds
// is sorted in place.
func quantile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	i := int(p*float64(len(ds))+0.999999) - 1
	return ds[min(max(i, 0), len(ds)-1)]
}
