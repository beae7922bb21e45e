package lookup_test

import (
	"testing"

	"github.com/bizmsg/platform/platform/fuzzcheck"
	"github.com/bizmsg/platform/platform/lookup"
	"github.com/bizmsg/platform/platform/phone"
)

// FuzzQuery: any query of GET /contacts/lookup (read as the handler reads
// it, phone.FromQuery giving a form-encoded '+' back) is a parsed request or
// a 422 naming the bad parameters; a control character in one is refused
// naming it (phones drop white space around them); what is accepted is
// E.164 and a positive id.
func FuzzQuery(f *testing.F) {
	for _, s := range [][3]string{
		{"+14155550100", "", ""}, {" 14155550100", "3", ""}, {"+1 (415) 555-0100", "", "+14155550101"},
		{"", "", ""}, {"14155550100", "0", "+1"}, {"+14155550100\x00", "3\x00", "\x01+14155550101"},
		{"+14155550100\n", "+3", " 14155550101"}, {"+1415\t5550100", "9223372036854775808", "abc"},
	} {
		f.Add(s[0], s[1], s[2])
	}
	f.Fuzz(func(t *testing.T, rawPhone, senderID, rawSender string) {
		q := lookup.Query{Phone: phone.FromQuery(rawPhone), SenderNumberID: senderID, SenderPhone: phone.FromQuery(rawSender)}
		got, err := q.Parse()
		for _, c := range []struct {
			name, value string
			bad         func(string) bool
		}{
			{"phone", q.Phone, fuzzcheck.InnerControl},
			{"sender_number_id", senderID, fuzzcheck.Control},
			{"sender_phone", q.SenderPhone, fuzzcheck.InnerControl},
		} {
			if c.bad(c.value) {
				if err == nil {
					t.Fatalf("%s %q accepted", c.name, c.value)
				}
				fuzzcheck.Names(t, err, c.name)
			}
		}
		if err != nil {
			if fuzzcheck.Refusal(t, err, "phone", "sender_number_id", "sender_phone") == nil {
				t.Fatal("a lookup refused with a 400, want a 422")
			}
			return
		}
		if p, err := phone.Normalize(got.Recipient); err != nil || p != got.Recipient {
			t.Fatalf("recipient %q is not E.164", got.Recipient)
		}
		if got.Sender.ID < 0 || (senderID != "" && got.Sender.ID == 0) {
			t.Fatalf("sender id %d from %q", got.Sender.ID, senderID)
		}
		if got.Sender.Phone != "" {
			if p, err := phone.Normalize(got.Sender.Phone); err != nil || p != got.Sender.Phone {
				t.Fatalf("sender phone %q is not E.164", got.Sender.Phone)
			}
		}
	})
}
