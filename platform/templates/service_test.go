package templates_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bizmsg/platform/platform/apperr"
	"github.com/bizmsg/platform/platform/clock"
	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/dbtest"
	"github.com/bizmsg/platform/platform/migrate"
	"github.com/bizmsg/platform/platform/network"
	"github.com/bizmsg/platform/platform/network/builtin"
	"github.com/bizmsg/platform/platform/network/networktest"
	"github.com/bizmsg/platform/platform/queue"
	"github.com/bizmsg/platform/platform/templates"
	"github.com/bizmsg/platform/platform/webhooks"
)

// tableEmitter records each event as a row of a table of the test
// database, in the transaction it is given: a rolled-back change leaves no
// event.
type tableEmitter struct{}

func (tableEmitter) Emit(ctx context.Context, tx pgx.Tx, t db.Tenant, evs ...webhooks.Event) error {
	for _, ev := range evs {
		data, err := json.Marshal(ev.Data)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO public.test_events (schema, type, key, data) VALUES ($1, $2, $3, $4)`,
			t.Schema, ev.Type, ev.Key, data); err != nil {
			return err
		}
	}
	return nil
}

// bundle is one test's service on a database of its own, with the
// built-in network and a fake clock.
type bundle struct {
	t   *testing.T
	db  *db.DB
	net *builtin.Network
	svc *templates.Service
	mig *migrate.Migrator
}

func setup(t *testing.T) *bundle {
	t.Helper()
	t.Parallel()
	d, _ := dbtest.Migrated(t)
	quiet := slog.New(slog.NewJSONHandler(io.Discard, nil))
	clk := clock.NewFake(time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC))
	if _, err := d.Pool.Exec(context.Background(), `CREATE TABLE public.test_events
		(id bigserial PRIMARY KEY, schema text, type text, key text, data jsonb)`); err != nil {
		t.Fatal(err)
	}
	net := networktest.Builtin(t, builtin.Config{DB: d, Clock: clk})
	rc, err := queue.NewClient(queue.Config{Pool: d.Pool, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	svc, err := templates.New(templates.Config{DB: d, Jobs: rc, Events: tableEmitter{}, Network: net, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	mig, err := migrate.New(migrate.Config{Pool: d.Pool, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	return &bundle{t: t, db: d, net: net, svc: svc, mig: mig}
}

// org creates an organization with its tenant schema.
func (b *bundle) org(name string) db.Tenant {
	b.t.Helper()
	ctx := context.Background()
	var id int64
	if err := b.db.Pool.QueryRow(ctx, `INSERT INTO central.organizations (name) VALUES ($1) RETURNING id`, name).Scan(&id); err != nil {
		b.t.Fatal(err)
	}
	if _, err := b.db.Pool.Exec(ctx, `UPDATE central.organizations SET schema_name = $2 WHERE id = $1`, id, db.SchemaFor(id)); err != nil {
		b.t.Fatal(err)
	}
	tn, err := db.NewTenant(id, db.SchemaFor(id))
	if err != nil {
		b.t.Fatal(err)
	}
	if _, err := b.mig.Tenant(ctx, tn); err != nil {
		b.t.Fatal(err)
	}
	return tn
}

// create creates a template from valid() with name, language, category
// and body changed.
func (b *bundle) create(tn db.Tenant, name, language, category, body string) templates.Template {
	b.t.Helper()
	in := valid()
	in.Name, in.Language, in.Category, in.Body = &name, &language, &category, &body
	in.Header, in.Examples = nil, map[string]string{"1": "x"}
	tpl, err := b.svc.Create(context.Background(), tn, in)
	if err != nil {
		b.t.Fatalf("create %s: %v", name, err)
	}
	return tpl
}

// events returns the types and statuses of tn's recorded events, in order.
func (b *bundle) events(tn db.Tenant) []string {
	b.t.Helper()
	rows, err := b.db.Pool.Query(context.Background(),
		`SELECT type || ':' || (data->>'status') FROM public.test_events WHERE schema = $1 ORDER BY id`, tn.Schema)
	if err != nil {
		b.t.Fatal(err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		b.t.Fatal(err)
	}
	return out
}

// drain applies the built-in network's outbox to the service.
func (b *bundle) drain() {
	b.t.Helper()
	if _, err := b.net.Drain(context.Background(), verdictSink{b.svc}, 0); err != nil {
		b.t.Fatal(err)
	}
}

// verdictSink applies template verdicts and ignores the rest.
type verdictSink struct{ svc *templates.Service }

func (verdictSink) Receipt(context.Context, network.Receipt) error { return nil }
func (verdictSink) Inbound(context.Context, network.Inbound) error { return nil }
func (s verdictSink) TemplateReviewed(ctx context.Context, v network.TemplateVerdict) error {
	_, err := s.svc.ApplyVerdict(ctx, v)
	return err
}

func code(err error) string {
	if e, ok := apperr.As(err); ok {
		return e.Code
	}
	return ""
}

func TestCreateGetDelete(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	acme, beta := b.org("Acme"), b.org("Beta")
	tpl := b.create(acme, "welcome", "en", "marketing", "Hello {{1}}, welcome.")
	if tpl.ID == 0 || tpl.Status != templates.StatusPending || tpl.Variables[0] != "1" {
		t.Fatalf("created %+v", tpl)
	}
	var jobs int
	if err := b.db.Pool.QueryRow(ctx, `SELECT count(*) FROM river.river_job WHERE kind = 'template_review'
		AND (args->>'template_id')::bigint = $1 AND args->>'schema' = $2`, tpl.ID, acme.Schema).Scan(&jobs); err != nil || jobs != 1 {
		t.Fatalf("review jobs %d, %v", jobs, err)
	}
	// The same name and language twice is a conflict; another language or
	// another organization is not.
	in := valid()
	in.Name, in.Language = ptr("welcome"), ptr("en")
	if _, err := b.svc.Create(ctx, acme, in); code(err) != templates.CodeTemplateExists {
		t.Fatalf("duplicate: %v", err)
	}
	b.create(acme, "welcome", "ar", "marketing", "Hello {{1}}, welcome.")
	other := b.create(beta, "welcome", "en", "marketing", "Hello {{1}}, welcome.")

	// A template without variables needs no examples.
	plain := valid()
	plain.Name, plain.Body, plain.Header, plain.Examples = ptr("plain"), ptr("Their text."), nil, nil
	if p, err := b.svc.Create(ctx, acme, plain); err != nil || len(p.Variables) != 0 || len(p.Examples) != 0 {
		t.Fatalf("template without variables: %+v, %v", p, err)
	}

	got, err := b.svc.Get(ctx, acme, tpl.ID)
	if err != nil || got.Body != tpl.Body || got.Examples["1"] != "x" {
		t.Fatalf("get: %+v, %v", got, err)
	}
	if _, err := b.svc.Get(ctx, acme, 999); code(err) != "not_found" {
		t.Fatalf("get unknown: %v", err)
	}
	if err := b.svc.Delete(ctx, acme, tpl.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := b.svc.Get(ctx, acme, tpl.ID); code(err) != "not_found" {
		t.Fatalf("get deleted: %v", err)
	}
	if err := b.svc.Delete(ctx, acme, tpl.ID); code(err) != "not_found" {
		t.Fatalf("delete twice: %v", err)
	}
	if _, err := b.svc.Get(ctx, beta, other.ID); err != nil {
		t.Fatalf("the other organization's template: %v", err)
	}
}

func TestList(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	tn := b.org("Acme")
	a := b.create(tn, "a", "en", "marketing", "A {{1}} a.")
	bb := b.create(tn, "b", "en", "utility", "B {{1}} b.")
	c := b.create(tn, "c", "en", "utility", "C {{1}} c.")
	if _, _, err := b.svc.SetStatus(ctx, tn, bb.ID, templates.StatusApproved, ""); err != nil {
		t.Fatal(err)
	}
	ids := func(q templates.ListQuery) ([]int64, string) {
		t.Helper()
		p, err := b.svc.List(ctx, tn, q)
		if err != nil {
			t.Fatal(err)
		}
		var out []int64
		for _, tpl := range p.Items {
			out = append(out, tpl.ID)
		}
		return out, p.NextCursor
	}
	first, cursor := ids(templates.ListQuery{Limit: "2"})
	if len(first) != 2 || first[0] != c.ID || first[1] != bb.ID || cursor == "" {
		t.Fatalf("first page %v %q", first, cursor)
	}
	if rest, next := ids(templates.ListQuery{Limit: "2", Cursor: cursor}); len(rest) != 1 || rest[0] != a.ID || next != "" {
		t.Fatalf("second page %v %q", rest, next)
	}
	for _, tt := range []struct {
		q    templates.ListQuery
		want []int64
	}{
		{templates.ListQuery{Status: "approved"}, []int64{bb.ID}},
		{templates.ListQuery{Status: "pending", Category: "utility"}, []int64{c.ID}},
		{templates.ListQuery{Name: "a"}, []int64{a.ID}},
		{templates.ListQuery{Status: "rejected"}, nil},
	} {
		if got, _ := ids(tt.q); len(got) != len(tt.want) || (len(got) > 0 && got[0] != tt.want[0]) {
			t.Errorf("%+v: %v, want %v", tt.q, got, tt.want)
		}
	}
	_, err := b.svc.List(ctx, tn, templates.ListQuery{Status: "gone", Category: "x", Limit: "0"})
	fields := fieldErrors(t, err)
	for _, f := range []string{"status", "category", "limit"} {
		if len(fields[f]) == 0 {
			t.Errorf("no error on %s: %v", f, fields)
		}
	}
}

func TestStatusChanges(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	tn := b.org("Acme")
	tpl := b.create(tn, "a", "en", "marketing", "A {{1}} a.")
	// The network's review moves only along the allowed transitions.
	if _, _, err := b.svc.Review(ctx, tn, tpl.ID, templates.StatusPaused, ""); code(err) != templates.CodeTransitionNotAllowed {
		t.Fatalf("pending → paused by review: %v", err)
	}
	steps := []struct {
		review bool
		to     templates.Status
		reason string
	}{
		{true, templates.StatusApproved, ""},
		{true, templates.StatusPaused, ""},
		{true, templates.StatusApproved, ""},
		{true, templates.StatusDisabled, ""},
		{false, templates.StatusRejected, ""},
		{false, templates.StatusApproved, ""},
	}
	for _, s := range steps {
		change := b.svc.SetStatus
		if s.review {
			change = b.svc.Review
		}
		got, changed, err := change(ctx, tn, tpl.ID, s.to, s.reason)
		if err != nil || !changed || got.Status != s.to {
			t.Fatalf("to %s: %+v %v %v", s.to, got, changed, err)
		}
		if s.to == templates.StatusRejected && got.RejectedReason != templates.DefaultRejectedReason {
			t.Errorf("rejected_reason %q", got.RejectedReason)
		}
		if s.to != templates.StatusRejected && got.RejectedReason != "" {
			t.Errorf("%s keeps rejected_reason %q", s.to, got.RejectedReason)
		}
	}
	// A repeat changes nothing and emits nothing.
	if _, changed, err := b.svc.Review(ctx, tn, tpl.ID, templates.StatusApproved, ""); err != nil || changed {
		t.Fatalf("repeat: %v %v", changed, err)
	}
	if _, _, err := b.svc.SetStatus(ctx, tn, tpl.ID, "gone", ""); code(err) != "validation_failed" {
		t.Fatalf("unknown status: %v", err)
	}
	want := []string{"approved", "paused", "approved", "disabled", "rejected", "approved"}
	got := b.events(tn)
	if len(got) != len(want) {
		t.Fatalf("events %v", got)
	}
	for i := range want {
		if got[i] != webhooks.EventTemplateStatus+":"+want[i] {
			t.Errorf("event %d %q, want %s", i, got[i], want[i])
		}
	}
}

func TestBuiltinReview(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	tn := b.org("Acme")
	tests := []struct {
		name, body string
		want       templates.Status
		reason     string
	}{
		{"ok", "Hello {{1}}, welcome.", templates.StatusApproved, ""},
		{"starts", "{{1}} is your code.", templates.StatusRejected, "starts with a variable"},
		{"ends", "Your code is {{1}}", templates.StatusRejected, "ends with a variable"},
		{"adjacent", "Hi {{1}} {{2}} there.", templates.StatusRejected, "two variables with only spaces"},
	}
	ids := map[string]int64{}
	for _, tt := range tests {
		in := valid()
		in.Name, in.Body, in.Header = ptr(tt.name), ptr(tt.body), nil
		in.Examples = map[string]string{"1": "x"}
		if tt.name == "adjacent" {
			in.Examples["2"] = "y"
		}
		tpl, err := b.svc.Create(ctx, tn, in)
		if err != nil {
			t.Fatal(err)
		}
		ids[tt.name] = tpl.ID
		if err := b.svc.Submit(ctx, queue.TemplateReviewArgs{TenantRef: queue.RefOf(tn), TemplateID: tpl.ID}); err != nil {
			t.Fatal(err)
		}
	}
	b.drain()
	for _, tt := range tests {
		got, err := b.svc.Get(ctx, tn, ids[tt.name])
		if err != nil {
			t.Fatal(err)
		}
		if got.Status != tt.want || (tt.reason != "" && !contains(got.RejectedReason, tt.reason)) {
			t.Errorf("%s: %s %q, want %s %q", tt.name, got.Status, got.RejectedReason, tt.want, tt.reason)
		}
	}
	// A template no longer pending is not submitted again; a verdict for
	// nothing of ours changes nothing.
	if err := b.svc.Submit(ctx, queue.TemplateReviewArgs{TenantRef: queue.RefOf(tn), TemplateID: ids["ok"]}); err != nil {
		t.Fatal(err)
	}
	if changed, err := b.svc.ApplyVerdict(ctx, network.TemplateVerdict{Reference: "tenant_999:template:1", Status: "approved"}); err != nil || changed {
		t.Fatalf("foreign verdict: %v %v", changed, err)
	}
	if changed, err := b.svc.ApplyVerdict(ctx, network.TemplateVerdict{Reference: "tenant_1:5", Status: "approved"}); err != nil || changed {
		t.Fatalf("message reference: %v %v", changed, err)
	}
}

func TestResolve(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	tn := b.org("Acme")
	tpl := b.create(tn, "a", "en", "marketing", "A {{1}} a.")
	if _, err := b.svc.Resolve(ctx, tn, "a", "ar"); code(err) != templates.CodeTemplateNotFound {
		t.Fatalf("unknown language: %v", err)
	}
	if _, err := b.svc.Resolve(ctx, tn, "a", "en"); code(err) != templates.CodeTemplateNotApproved {
		t.Fatalf("pending: %v", err)
	}
	if _, _, err := b.svc.SetStatus(ctx, tn, tpl.ID, templates.StatusApproved, ""); err != nil {
		t.Fatal(err)
	}
	got, err := b.svc.Resolve(ctx, tn, "a", "en")
	if err != nil || got.ID != tpl.ID {
		t.Fatalf("approved: %+v %v", got, err)
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }
