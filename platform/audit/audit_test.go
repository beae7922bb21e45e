package audit_test

import (
	"context"
	"encoding/json"
	"net/url"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/bizmsg/platform/platform/apperr"
	"github.com/bizmsg/platform/platform/audit"
	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/dbtest"
	"github.com/bizmsg/platform/platform/page"
)

func TestQueryParse(t *testing.T) {
	t.Parallel()
	since := time.Date(2026, 11, 22, 14, 0, 0, 0, time.UTC)
	tests := []struct {
		name       string
		query      string
		check      func(audit.Filter) bool
		wantFields []string
	}{
		{"empty", "", func(f audit.Filter) bool {
			return f.Page.Limit == 25 && f.Actor.Type == "" && f.Action == "" && f.Since == nil
		}, nil},
		{"user id", "actor=12", func(f audit.Filter) bool { return f.Actor == audit.User(12) }, nil},
		{"user prefix", "actor=user:12", func(f audit.Filter) bool { return f.Actor == audit.User(12) }, nil},
		{"api key", "actor=api_key:3", func(f audit.Filter) bool { return f.Actor == audit.APIKey(3) }, nil},
		{"network", "actor=network", func(f audit.Filter) bool { return f.Actor == audit.Network() }, nil},
		{"operator", "actor=operator", func(f audit.Filter) bool { return f.Actor == audit.Operator() }, nil},
		{"system", "actor=system", func(f audit.Filter) bool { return f.Actor == audit.System() }, nil},
		{"action", "action=api_key.create", func(f audit.Filter) bool { return f.Action == "api_key.create" && f.Family == "" }, nil},
		{"family", "action=sender", func(f audit.Filter) bool { return f.Family == "sender" && f.Action == "" }, nil},
		{"target", "target=api_key:12", func(f audit.Filter) bool {
			return f.Target == audit.Target{Type: audit.TargetAPIKey, ID: 12}
		}, nil},
		{"empty window", "since=2026-11-22T14:00:00Z&until=2026-11-22T15:00:00%2B01:00", nil, []string{"until"}},
		{"window ok", "since=2026-11-22T14:00:00Z&until=2026-11-22T16:00:00%2B01:00", func(f audit.Filter) bool {
			return f.Since.Equal(since) && f.Until.Equal(since.Add(time.Hour))
		}, nil},
		{"limit", "limit=100", func(f audit.Filter) bool { return f.Page.Limit == 100 }, nil},
		{"zero user", "actor=0", nil, []string{"actor"}},
		{"leading zero", "actor=012", nil, []string{"actor"}},
		{"signed", "actor=%2B12", nil, []string{"actor"}},
		{"unknown actor", "actor=admin", nil, []string{"actor"}},
		{"actor nul", "actor=network%00", nil, []string{"actor"}},
		{"unknown action", "action=api_key.delete", nil, []string{"action"}},
		{"action control", "action=member.add%0A", nil, []string{"action"}},
		{"target without id", "target=api_key", nil, []string{"target"}},
		{"target unknown type", "target=message:3", nil, []string{"target"}},
		{"target spaced id", "target=api_key:%2012", nil, []string{"target"}},
		{"since not a time", "since=yesterday", nil, []string{"since"}},
		{"until nul", "until=2026-11-22T14:00:00Z%00", nil, []string{"until"}},
		{"until before since", "since=2026-11-22T14:00:00Z&until=2026-11-22T13:00:00Z", nil, []string{"until"}},
		{"bad limit and cursor", "limit=0&cursor=nope", nil, []string{"limit", "cursor"}},
		{"all wrong", "actor=x&action=y&target=z&since=a&until=b&limit=101", nil, []string{"actor", "action", "target", "since", "until", "limit"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			v, err := url.ParseQuery(tt.query)
			if err != nil {
				t.Fatal(err)
			}
			f, err := audit.QueryFrom(v).Parse()
			if tt.wantFields != nil {
				e, ok := apperr.As(err)
				if !ok || e.Kind != apperr.KindInvalid {
					t.Fatalf("Parse(%s) = %+v, %v; want a validation error", tt.query, f, err)
				}
				var got []string
				for field := range e.Fields {
					got = append(got, field)
				}
				slices.Sort(got)
				want := slices.Clone(tt.wantFields)
				slices.Sort(want)
				if !slices.Equal(got, want) {
					t.Fatalf("Parse(%s) fields %v, want %v", tt.query, got, want)
				}
				return
			}
			if err != nil || !tt.check(f) {
				t.Fatalf("Parse(%s) = %+v, %v", tt.query, f, err)
			}
		})
	}
}

// fixture is a migrated database with two organizations and a user in the
// first.
type fixture struct {
	db         *db.DB
	svc        *audit.Service
	org, other int64
	user       int64
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	d, _ := dbtest.Migrated(t)
	ctx := context.Background()
	f := &fixture{db: d}
	for _, id := range []*int64{&f.org, &f.other} {
		if err := d.Pool.QueryRow(ctx, `INSERT INTO central.organizations (name) VALUES ('o') RETURNING id`).Scan(id); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.Pool.QueryRow(ctx, `INSERT INTO central.users (email, name, password_hash) VALUES ('ada@example.com', 'Ada', 'x') RETURNING id`).Scan(&f.user); err != nil {
		t.Fatal(err)
	}
	svc, err := audit.New(audit.Config{DB: d})
	if err != nil {
		t.Fatal(err)
	}
	f.svc = svc
	return f
}

func (f *fixture) record(t *testing.T, e audit.Entry) {
	t.Helper()
	if err := audit.Record(context.Background(), f.db.Pool, e); err != nil {
		t.Fatal(err)
	}
}

func (f *fixture) list(t *testing.T, orgID int64, query string) page.Of[audit.Entry] {
	t.Helper()
	v, err := url.ParseQuery(query)
	if err != nil {
		t.Fatal(err)
	}
	p, err := f.svc.List(context.Background(), orgID, audit.QueryFrom(v))
	if err != nil {
		t.Fatalf("List(%s): %v", query, err)
	}
	return p
}

func ids(p page.Of[audit.Entry]) []int64 {
	out := make([]int64, len(p.Items))
	for i, e := range p.Items {
		out[i] = e.ID
	}
	return out
}

// Entries are recorded with the actor's name as it was, listed newest first
// with every filter, paged by cursor, and never across organizations; the
// actor's id and name outlive the account.
func TestRecordAndList(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	at := time.Date(2026, 11, 22, 14, 0, 0, 0, time.UTC)
	key := audit.Target{Type: audit.TargetAPIKey, ID: 12}
	sender := audit.Target{Type: audit.TargetSenderNumber, ID: 7}
	entries := []audit.Entry{
		{OrgID: f.org, Actor: audit.User(f.user), Action: audit.ActionAPIKeyCreate, Target: key, Details: map[string]any{"name": "k"}, At: at},
		{OrgID: f.org, Actor: audit.APIKey(5), Action: audit.ActionAPIKeyRevoke, Target: key, At: at.Add(time.Minute)},
		{OrgID: f.org, Actor: audit.Network(), Action: audit.ActionSenderActivate, Target: sender, Details: map[string]any{"via": "sweep"}, At: at.Add(2 * time.Minute)},
		{OrgID: f.org, Actor: audit.Operator(), Action: audit.ActionSenderSuspend, Target: sender, At: at.Add(3 * time.Minute)},
		{OrgID: f.other, Actor: audit.User(f.user), Action: audit.ActionAPIKeyCreate, Target: key, At: at},
	}
	for _, e := range entries {
		f.record(t, e)
	}
	// The user leaves: the entries keep their id and name.
	if _, err := f.db.Pool.Exec(context.Background(), `DELETE FROM central.users WHERE id = $1`, f.user); err != nil {
		t.Fatal(err)
	}
	all := f.list(t, f.org, "")
	if len(all.Items) != 4 || all.NextCursor != "" {
		t.Fatalf("list = %+v", all)
	}
	newest, oldest := all.Items[0], all.Items[3]
	if newest.Action != audit.ActionSenderSuspend || oldest.Actor != (audit.Actor{Type: audit.ActorUser, ID: f.user, Name: "Ada"}) ||
		oldest.Details["name"] != "k" || !oldest.At.Equal(at) || oldest.Target != key {
		t.Fatalf("entries %+v ... %+v", newest, oldest)
	}
	tests := []struct {
		query string
		want  []audit.Entry // by their position in entries
	}{
		{"actor=" + strconv.FormatInt(f.user, 10), []audit.Entry{entries[0]}},
		{"actor=api_key:5", []audit.Entry{entries[1]}},
		{"actor=network", []audit.Entry{entries[2]}},
		{"actor=operator", []audit.Entry{entries[3]}},
		{"actor=system", nil},
		{"action=api_key", []audit.Entry{entries[1], entries[0]}},
		{"action=sender.activate", []audit.Entry{entries[2]}},
		{"target=sender_number:7", []audit.Entry{entries[3], entries[2]}},
		{"target=sender_number:8", nil},
		{"since=2026-11-22T14:01:00Z&until=2026-11-22T14:03:00Z", []audit.Entry{entries[2], entries[1]}},
		{"action=api_key&target=api_key:12&actor=api_key:5", []audit.Entry{entries[1]}},
	}
	for _, tt := range tests {
		got := f.list(t, f.org, tt.query)
		if len(got.Items) != len(tt.want) {
			t.Errorf("%s: %d entries, want %d", tt.query, len(got.Items), len(tt.want))
			continue
		}
		for i, w := range tt.want {
			if g := got.Items[i]; g.Action != w.Action || g.Actor.Type != w.Actor.Type || !g.At.Equal(w.At) {
				t.Errorf("%s: entry %d = %+v, want %+v", tt.query, i, g, w)
			}
		}
	}
	// Paging: two pages of two, then the end.
	first := f.list(t, f.org, "limit=2")
	second := f.list(t, f.org, "limit=2&cursor="+url.QueryEscape(first.NextCursor))
	if got := append(ids(first), ids(second)...); !slices.Equal(got, ids(all)) || second.NextCursor != "" {
		t.Fatalf("pages %v + %v (next %q), want %v", ids(first), ids(second), second.NextCursor, ids(all))
	}
	// The other organization sees its one entry only.
	if got := f.list(t, f.other, ""); len(got.Items) != 1 || got.Items[0].OrgID != f.other {
		t.Fatalf("other organization's list %+v", got)
	}
}

// The resource: actor id and name null when unknown, details an object,
// the time RFC 3339 UTC to the second.
func TestEntryJSON(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 22, 14, 3, 5, 900_000_000, time.FixedZone("x", 3600))
	tests := []struct {
		name  string
		entry audit.Entry
		want  string
	}{
		{"user", audit.Entry{ID: 1, Actor: audit.Actor{Type: audit.ActorUser, ID: 3, Name: "Ada"}, Action: audit.ActionAPIKeyCreate,
			Target: audit.Target{Type: audit.TargetAPIKey, ID: 12}, Details: map[string]any{"name": "k"}, At: at},
			`{"id":1,"actor":{"type":"user","id":3,"name":"Ada"},"action":"api_key.create","target":{"type":"api_key","id":12},"details":{"name":"k"},"created_at":"2026-11-22T13:03:05Z"}`},
		{"network", audit.Entry{ID: 2, Actor: audit.Network(), Action: audit.ActionSenderActivate,
			Target: audit.Target{Type: audit.TargetSenderNumber, ID: 7}, At: at},
			`{"id":2,"actor":{"type":"network","id":null,"name":null},"action":"sender.activate","target":{"type":"sender_number","id":7},"details":{},"created_at":"2026-11-22T13:03:05Z"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b, err := json.Marshal(tt.entry)
			if err != nil || string(b) != tt.want {
				t.Fatalf("json = %s, %v\nwant %s", b, err, tt.want)
			}
		})
	}
}

// Record refuses an entry the log cannot hold (a programming error), and
// writes nothing.
func TestRecordRefuses(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	at := time.Now()
	ok := audit.Entry{OrgID: f.org, Actor: audit.Operator(), Action: audit.ActionSenderReject,
		Target: audit.Target{Type: audit.TargetSenderNumber, ID: 1}, At: at}
	tests := []struct {
		name   string
		change func(*audit.Entry)
	}{
		{"no organization", func(e *audit.Entry) { e.OrgID = 0 }},
		{"unknown actor", func(e *audit.Entry) { e.Actor.Type = "robot" }},
		{"unknown action", func(e *audit.Entry) { e.Action = "sender.delete" }},
		{"unknown target", func(e *audit.Entry) { e.Target.Type = "message" }},
		{"target without id", func(e *audit.Entry) { e.Target.ID = 0 }},
		{"no time", func(e *audit.Entry) { e.At = time.Time{} }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := ok
			tt.change(&e)
			if err := audit.Record(context.Background(), f.db.Pool, e); err == nil {
				t.Fatal("Record accepted it")
			}
		})
	}
	t.Cleanup(func() {
		if got := f.list(t, f.org, ""); len(got.Items) != 0 {
			t.Errorf("refused entries were written: %+v", got.Items)
		}
	})
}
