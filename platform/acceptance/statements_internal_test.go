package acceptance

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/messages"
	"github.com/bizmsg/platform/platform/senders"
)

// Every variant of the acceptance statement is a query of its own, with
// the arguments its checks need and no other: a sender by id or phone, a
// window, a template, a release's message and reserve.
func TestAcceptVariants(t *testing.T) {
	t.Parallel()
	q, err := loadQueries()
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]acceptVariant{}
	for _, v := range []acceptVariant{
		{}, {byID: true}, {window: true}, {byID: true, window: true},
		{template: true}, {template: true, byID: true}, {template: true, window: true}, {template: true, byID: true, window: true},
		{release: true, byID: true}, {release: true, byID: true, window: true},
		{release: true, byID: true, template: true}, {release: true, byID: true, template: true, window: true},
	} {
		name := v.name()
		if other, dup := names[name]; dup {
			t.Errorf("%+v and %+v are both %s", v, other, name)
		}
		names[name] = v
		params := q.Params(name)
		if len(params) == 0 {
			t.Errorf("%+v: no query %s", v, name)
			continue
		}
		has := func(p string) bool { return slices.Contains(params, p) }
		for p, want := range map[string]bool{
			"limit": true, "phone": true, "to_phone": true, "at": true,
			"sender":      v.byID,
			"type":        v.window || v.release,
			"window_secs": v.window,
			"template_id": v.template,
			"id":          v.release, "reserve": v.release, "content": v.release,
			"template_ref": v.template && v.release,
		} {
			if has(p) != want {
				t.Errorf("%s (%+v): parameter %s is there: %v, want %v", name, v, p, has(p), want)
			}
		}
	}
	for _, window := range []bool{false, true} {
		params := q.Params(batchName(window))
		if got := slices.Contains(params, "window_secs"); got != window || len(params) < 6 {
			t.Errorf("%s: parameters %v", batchName(window), params)
		}
	}
}

// BenchmarkAcceptStatement measures what a send's and a release's
// acceptance statement cost the process before it runs: the variant's
// text for the tenant and its arguments (sqlq's Pgx), on every call.
func BenchmarkAcceptStatement(b *testing.B) {
	q, err := loadQueries()
	if err != nil {
		b.Fatal(err)
	}
	tn := db.Tenant{OrgID: 42, Schema: db.SchemaFor(42)}
	at := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	tplID, ref := int64(7), `{"name":"n"}`
	r := &messages.Row{Message: messages.Message{ID: 9, SenderNumberID: 3, ToPhone: "+14155550002", Type: messages.TypeText,
		Content: "hello", CreatedAt: at, TemplateID: &tplID}, UpdatedAt: at, TemplateRef: &ref}
	for _, window := range []time.Duration{0, 24 * time.Hour} {
		s := &Service{q: q, cfg: Config{ServiceWindow: window}, windowSecs: window.Seconds()}
		b.Run(fmt.Sprintf("send/window=%v", window > 0), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				v := acceptVariant{byID: true, window: window > 0}
				if _, _, err := s.q.Pgx(v.name(), tn.Quoted(), s.sendArgs(100, senders.SenderRef{ID: 3}, r)); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("release/window=%v", window > 0), func(b *testing.B) {
			b.ReportAllocs()
			c := &Checked{row: *r, reserve: 10}
			for b.Loop() {
				if _, _, _, err := s.releaseStatement(tn, 100, c); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
