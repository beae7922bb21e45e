package messages

import (
	"testing"
	"time"

	"github.com/bizmsg/platform/platform/fuzzcheck"
	"github.com/bizmsg/platform/platform/phone"
)

// FuzzListQuery: any query of GET /messages is a filter or a 422 naming
// the bad parameters (a control character in one included; phones and
// times drop white space around them); an accepted filter holds only valid
// values, and a cursor the list hands out for its last row reads back.
func FuzzListQuery(f *testing.F) {
	idCursor := encodeCursor(position{id: 7})
	timeCursor := encodeCursor(position{id: 7, timed: true, at: time.Date(2026, 11, 22, 14, 0, 0, 0, time.UTC)})
	for _, q := range []ListQuery{
		{}, {Limit: "100", Cursor: idCursor, SenderNumberID: "3", ToPhone: " 14155550100", Status: "sent", Type: "text", ClientReference: "o-1"},
		{Since: "2026-11-22T14:00:00Z", Until: "2026-11-23T00:00:00+01:00", Cursor: timeCursor},
		{Since: "2026-11-22T14:00:00Z", Cursor: idCursor}, {Cursor: timeCursor}, {Cursor: idCursor + "\n"},
		{Limit: "0", SenderNumberID: "-1", ToPhone: "+1415\x00", Status: "lost", Type: "fax", Since: "yesterday", Until: "\x01", ClientReference: "a\x00"},
		{Since: "2026-11-23T00:00:00Z", Until: "2026-11-22T00:00:00Z"},
	} {
		f.Add(q.Limit, q.Cursor, q.SenderNumberID, q.ToPhone, q.Status, q.Type, q.Since, q.Until, q.ClientReference)
	}
	f.Fuzz(func(t *testing.T, limit, cursor, senderID, toPhone, status, typ, since, until, ref string) {
		q := ListQuery{Limit: limit, Cursor: cursor, SenderNumberID: senderID, ToPhone: toPhone, Status: status,
			Type: typ, Since: since, Until: until, ClientReference: ref}
		flt, err := q.parse()
		for _, c := range []struct {
			name, value string
			bad         func(string) bool
		}{
			{"limit", limit, fuzzcheck.Control}, {"cursor", cursor, fuzzcheck.Control},
			{"sender_number_id", senderID, fuzzcheck.Control}, {"to_phone", toPhone, fuzzcheck.InnerControl},
			{"status", status, fuzzcheck.Control}, {"type", typ, fuzzcheck.Control},
			{"since", since, fuzzcheck.InnerControl}, {"until", until, fuzzcheck.InnerControl},
			{"client_reference", ref, fuzzcheck.Control},
		} {
			if c.bad(c.value) {
				if err == nil {
					t.Fatalf("%s %q accepted", c.name, c.value)
				}
				fuzzcheck.Names(t, err, c.name)
			}
		}
		if err != nil {
			if fuzzcheck.Refusal(t, err, listFields...) == nil {
				t.Fatal("a query refused with a 400, want a 422")
			}
			return
		}
		if flt.limit < 1 || flt.limit > MaxPageLimit || flt.senderID < 0 {
			t.Fatalf("filter %+v", flt)
		}
		if flt.toPhone != "" {
			if p, err := phone.Normalize(flt.toPhone); err != nil || p != flt.toPhone {
				t.Fatalf("to_phone %q", flt.toPhone)
			}
		}
		if flt.since != nil && flt.until != nil && !flt.since.Before(*flt.until) {
			t.Fatalf("window %v..%v", flt.since, flt.until)
		}
		if flt.after != nil {
			if flt.after.id <= 0 || flt.after.timed != flt.byTime() {
				t.Fatalf("cursor %q read as %+v", cursor, *flt.after)
			}
			back, ok := decodeCursor(encodeCursor(*flt.after))
			if !ok || back.id != flt.after.id || back.timed != flt.after.timed || !back.at.Equal(flt.after.at) {
				t.Fatalf("cursor %+v reads back as %+v", *flt.after, back)
			}
		}
	})
}

// listFields are the parameters a history refusal may name.
var listFields = []string{"limit", "cursor", "sender_number_id", "to_phone", "status", "type", "since", "until", "client_reference"}
