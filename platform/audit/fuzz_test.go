package audit_test

import (
	"strconv"
	"testing"

	"github.com/bizmsg/platform/platform/audit"
	"github.com/bizmsg/platform/platform/fuzzcheck"
	"github.com/bizmsg/platform/platform/httpx"
)

// FuzzQuery: any query of GET /audit-log is a filter or a 422 naming every
// bad parameter; a control character in one is refused naming it (times
// drop white space around them); ids are plain decimal digits, as in paths
// (httpx.ParseID), so each entry has one spelling of its target.
func FuzzQuery(f *testing.F) {
	for _, q := range []audit.Query{
		{}, {Actor: "12", Action: "api_key.create", Target: "api_key:12", Since: "2026-11-22T14:00:00Z", Until: "2026-11-23T00:00:00+01:00", Limit: "5"},
		{Actor: "user:3"}, {Actor: "api_key:7"}, {Actor: "network"}, {Actor: "operator"}, {Actor: "system"}, {Action: "sender"},
		{Actor: "012"}, {Actor: "+1"}, {Actor: "user:"}, {Actor: "network\x00"}, {Action: "member.add\n"}, {Target: "user:1 "},
		{Target: "sender_number:٣"}, {Since: "\t2026-11-22T14:00:00Z"}, {Until: "2026-11-22T14:00:00Z\x01"}, {Cursor: "aWQ6Nw\n"},
	} {
		f.Add(q.Limit, q.Cursor, q.Actor, q.Action, q.Target, q.Since, q.Until)
	}
	f.Fuzz(func(t *testing.T, limit, cursor, actor, action, target, since, until string) {
		q := audit.Query{Limit: limit, Cursor: cursor, Actor: actor, Action: action, Target: target, Since: since, Until: until}
		flt, err := q.Parse()
		for _, c := range []struct {
			name, value string
			bad         func(string) bool
		}{
			{"limit", limit, fuzzcheck.Control}, {"cursor", cursor, fuzzcheck.Control},
			{"actor", actor, fuzzcheck.Control}, {"action", action, fuzzcheck.Control}, {"target", target, fuzzcheck.Control},
			{"since", since, fuzzcheck.InnerControl}, {"until", until, fuzzcheck.InnerControl},
		} {
			if c.bad(c.value) {
				if err == nil {
					t.Fatalf("%s %q accepted", c.name, c.value)
				}
				fuzzcheck.Names(t, err, c.name)
			}
		}
		if err != nil {
			if fuzzcheck.Refusal(t, err, "limit", "cursor", "actor", "action", "target", "since", "until") == nil {
				t.Fatal("a query refused with a 400, want a 422")
			}
			return
		}
		if actor != "" {
			switch flt.Actor.Type {
			case audit.ActorUser, audit.ActorAPIKey:
				// The id is written in the filter exactly as it reads back.
				id := strconv.FormatInt(flt.Actor.ID, 10)
				if n, ok := httpx.ParseID(id); !ok || n != flt.Actor.ID || (actor != id && actor != flt.Actor.Type+":"+id) {
					t.Fatalf("actor %q read as %+v", actor, flt.Actor)
				}
			case audit.ActorOperator, audit.ActorNetwork, audit.ActorSystem:
				if actor != flt.Actor.Type || flt.Actor.ID != 0 {
					t.Fatalf("actor %q read as %+v", actor, flt.Actor)
				}
			default:
				t.Fatalf("actor %q read as %+v", actor, flt.Actor)
			}
		}
		if target != "" {
			if flt.Target.String() != target || flt.Target.ID <= 0 {
				t.Fatalf("target %q read as %+v", target, flt.Target)
			}
		}
		if action != "" && flt.Action != action && flt.Family != action {
			t.Fatalf("action %q read as %q / %q", action, flt.Action, flt.Family)
		}
		if flt.Since != nil && flt.Until != nil && !flt.Since.Before(*flt.Until) {
			t.Fatalf("window %v..%v", flt.Since, flt.Until)
		}
		if flt.Page.Limit < 1 || flt.Page.Limit > 100 || (cursor != "" && flt.Page.After <= 0) {
			t.Fatalf("page %+v", flt.Page)
		}
	})
}
