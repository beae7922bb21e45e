package consent

import (
	"testing"

	"github.com/bizmsg/platform/platform/fuzzcheck"
	"github.com/bizmsg/platform/platform/phone"
)

// FuzzListQuery: any query of GET /opt-outs (read as the handler reads it)
// is a filter or a 422 naming the bad parameters; a phone it accepts is
// E.164, a source one of the three.
func FuzzListQuery(f *testing.F) {
	for _, s := range [][4]string{
		{"", "", "", ""}, {"+14155550100", "keyword", "10", ""}, {" 1 415 555 0100", "api", "0", "x"},
		{"abc", "sms", "101", "aWQ6MQ"}, {"+1415\x005550100", "dashboard\x00", "-1", "\x01"},
	} {
		f.Add(s[0], s[1], s[2], s[3])
	}
	f.Fuzz(func(t *testing.T, rawPhone, source, limit, cursor string) {
		q := ListQuery{Phone: phone.FromQuery(rawPhone), Source: source, Limit: limit, Cursor: cursor}
		got, err := q.parse()
		if fuzzcheck.InnerControl(q.Phone) || fuzzcheck.Control(source) {
			if err == nil {
				t.Fatalf("control character accepted in %+v", q)
			}
		}
		if err != nil {
			fuzzcheck.Refusal(t, err, "phone", "source", "limit", "cursor")
			return
		}
		if got.phone != nil {
			if p, err := phone.Normalize(*got.phone); err != nil || p != *got.phone {
				t.Fatalf("phone %q is not E.164", *got.phone)
			}
		}
		if got.source != nil && *got.source != SourceKeyword && *got.source != SourceAPI && *got.source != SourceDashboard {
			t.Fatalf("source %q accepted", *got.source)
		}
	})
}

// FuzzAddRequest: any body of POST /opt-outs is an entry or a 422 naming
// phone or note; an accepted phone is E.164, a note has no control
// character.
func FuzzAddRequest(f *testing.F) {
	for _, s := range [][2]string{{"+14155550100", ""}, {"1 (415) 555-0100", " asked "}, {"", "\x00"}, {"12", "n"}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, raw, note string) {
		e, err := AddRequest{Phone: raw, Note: note, Source: SourceAPI}.entry()
		if err != nil {
			fuzzcheck.Refusal(t, err, "phone", "note")
			return
		}
		if p, err := phone.Normalize(e.Phone); err != nil || p != e.Phone {
			t.Fatalf("phone %q is not E.164", e.Phone)
		}
		if e.Note != nil && fuzzcheck.Control(*e.Note) {
			t.Fatalf("note %q kept a control character", *e.Note)
		}
	})
}
