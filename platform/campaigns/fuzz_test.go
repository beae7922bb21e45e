package campaigns_test

import (
	"encoding/json"
	"mime"
	"testing"

	"github.com/bizmsg/platform/platform/apperr"
	"github.com/bizmsg/platform/platform/campaigns"
)

// FuzzDecodeRecipients: any recipients body is rows or a refusal of the
// client's (400 malformed_json or malformed_csv, 415, 422
// campaign_too_many_rows), never a panic or a 500; rows are numbered
// 1, 2, ... in order, at most 10,000 of them; a JSON body's rows are its
// array's items.
func FuzzDecodeRecipients(f *testing.F) {
	for _, s := range [][2]string{
		{"application/json", `[{"phone": "+14155550100", "variables": {"1": "Ana"}}]`},
		{"application/json", `[1, "x", null, {"phone": 5, "variables": {"a": 1}}]`},
		{"application/json", `{"phone": "+1"}`},
		{"application/json", "[{\"phone\": \"\\u0000\"}]"},
		{"text/csv", "phone,first_name,client_reference\n+14155550100,Ana,r\n"},
		{"text/csv", "\uFEFFphone\r\n\"+1 415\"\r\n"},
		{"text/csv", "phone,a\n+1\n"},
		{"text/csv", "phone\n\"unterminated\n"},
		{"text/plain", "phone\n+1\n"},
		{"", ""},
	} {
		f.Add(s[0], []byte(s[1]))
	}
	f.Fuzz(func(t *testing.T, contentType string, body []byte) {
		rows, err := campaigns.DecodeRecipients(contentType, body)
		if err != nil {
			e, ok := apperr.As(err)
			if !ok {
				t.Fatalf("error %v (%T) would answer 500", err, err)
			}
			switch {
			case e.Kind == apperr.KindMalformed && (e.Code == "malformed_json" || e.Code == campaigns.CodeMalformedCSV):
			case e.Kind == apperr.KindUnsupportedMediaType:
			case e.Kind == apperr.KindInvalid && e.Code == campaigns.CodeTooManyRows:
			default:
				t.Fatalf("refusal %v is %s %s", err, e.Kind, e.Code)
			}
			if e.Message == "" {
				t.Fatalf("refusal without a message: %v", err)
			}
			return
		}
		if len(rows) > campaigns.MaxRowsPerRequest {
			t.Fatalf("%d rows, over the limit", len(rows))
		}
		for i, r := range rows {
			if r.N != i+1 {
				t.Fatalf("row %d numbered %d", i+1, r.N)
			}
		}
		var items []json.RawMessage
		if mt, _, _ := mime.ParseMediaType(contentType); mt == "application/json" &&
			json.Unmarshal(body, &items) == nil && len(rows) != len(items) {
			t.Fatalf("%d rows of a JSON array of %d items", len(rows), len(items))
		}
	})
}
