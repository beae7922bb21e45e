package campaigns_test

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/bizmsg/platform/platform/apperr"
	"github.com/bizmsg/platform/platform/campaigns"
)

// TestDecodeRecipients: the rows of JSON and CSV bodies, numbered from 1
// among the data rows, a row's wrong parts kept as its Problem, and the
// bodies that cannot be read refused with the right kind and code.
func TestDecodeRecipients(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, ct, body string
		want           []campaigns.Row
	}{
		{"json", "application/json", `[{"phone": "+14155550100", "variables": {"1": "Ana"}, "client_reference": "r1"},
			{"phone": "+14155550101", "variables": null, "unknown": 1}]`, []campaigns.Row{
			{N: 1, Phone: "+14155550100", Variables: map[string]string{"1": "Ana"}, ClientReference: "r1"},
			{N: 2, Phone: "+14155550101"},
		}},
		{"json with charset", "application/json; charset=utf-8", `[]`, []campaigns.Row{}},
		{"json wrong types", "application/json", `[5, {"phone": 1}, {"phone": "+1", "variables": {"a": 2}}, {"variables": []}]`,
			[]campaigns.Row{
				{N: 1, Problem: "must be an object {phone, variables?, client_reference?}"},
				{N: 2, Problem: "phone must be a string"},
				{N: 3, Phone: "+1", Variables: map[string]string{}, Problem: "variables.a must be a string"},
				{N: 4, Problem: `variables must be an object of strings, such as {"1": "Ana"}`},
			}},
		{"csv", "text/csv", "\uFEFF Phone ,first_name,client_reference\r\n+14155550100, Ana ,r1\n\"+1 415 555 0101\",,\n",
			[]campaigns.Row{
				{N: 1, Phone: "+14155550100", Variables: map[string]string{"first_name": "Ana"}, ClientReference: "r1"},
				{N: 2, Phone: "+1 415 555 0101"},
			}},
		{"csv header only", "text/csv; charset=utf-8", "phone\n", nil},
		{"csv quoted line break", "text/csv", "phone,note\n+14155550100,\"a\nb\"\n+14155550101,c\n", []campaigns.Row{
			{N: 1, Phone: "+14155550100", Variables: map[string]string{"note": "a\nb"}},
			{N: 2, Phone: "+14155550101", Variables: map[string]string{"note": "c"}},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := campaigns.DecodeRecipients(tc.ct, []byte(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tc.want) || len(got) > 0 && !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("rows\n%+v\nwant\n%+v", got, tc.want)
			}
		})
	}

	many := func(n int) string {
		var b strings.Builder
		b.WriteString("phone\n")
		for i := range n {
			fmt.Fprintf(&b, "+1415555%04d\n", i)
		}
		return b.String()
	}
	manyJSON := "[" + strings.TrimSuffix(strings.Repeat(`{"phone":"+14155550100"},`, 10_001), ",") + "]"
	refusals := []struct {
		name, ct, body string
		kind           apperr.Kind
		code           string
	}{
		{"no media type", "", `[]`, apperr.KindUnsupportedMediaType, "unsupported_media_type"},
		{"text/plain", "text/plain", "phone\n", apperr.KindUnsupportedMediaType, "unsupported_media_type"},
		{"empty json", "application/json", " ", apperr.KindMalformed, "malformed_json"},
		{"json object", "application/json", `{"phone": "+1"}`, apperr.KindMalformed, "malformed_json"},
		{"json cut", "application/json", `[{"phone": `, apperr.KindMalformed, "malformed_json"},
		{"json trailing", "application/json", `[] []`, apperr.KindMalformed, "malformed_json"},
		{"json 10,001 rows", "application/json", manyJSON, apperr.KindInvalid, campaigns.CodeTooManyRows},
		{"csv empty", "text/csv", "", apperr.KindMalformed, campaigns.CodeMalformedCSV},
		{"csv no phone first", "text/csv", "name,phone\nx,+1\n", apperr.KindMalformed, campaigns.CodeMalformedCSV},
		{"csv unnamed column", "text/csv", "phone,,x\n", apperr.KindMalformed, campaigns.CodeMalformedCSV},
		{"csv column twice", "text/csv", "phone,a,a\n", apperr.KindMalformed, campaigns.CodeMalformedCSV},
		{"csv short row", "text/csv", "phone,a\n+14155550100\n", apperr.KindMalformed, campaigns.CodeMalformedCSV},
		{"csv bare quote", "text/csv", "phone\n+1\"4\n", apperr.KindMalformed, campaigns.CodeMalformedCSV},
		{"csv 10,001 rows", "text/csv", many(10_001), apperr.KindInvalid, campaigns.CodeTooManyRows},
	}
	for _, tc := range refusals {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := campaigns.DecodeRecipients(tc.ct, []byte(tc.body))
			e, ok := apperr.As(err)
			if !ok || e.Kind != tc.kind || e.Code != tc.code || e.Message == "" {
				t.Fatalf("error %v, want %s %s", err, tc.kind, tc.code)
			}
		})
	}
	if rows, err := campaigns.DecodeRecipients("text/csv", []byte(many(10_000))); err != nil || len(rows) != 10_000 {
		t.Fatalf("10,000 rows: %d, %v", len(rows), err)
	}
}

// TestSkipReason: the one map of skip reasons, and a code it does not
// list named as it is.
func TestSkipReason(t *testing.T) {
	t.Parallel()
	for code, want := range map[string]string{
		"recipient_opted_out": "opted_out", "recipient_unreachable": "unreachable",
		"template_not_approved": "template_not_approved", "outside_service_window": "outside_service_window",
		"sender_not_active": "sender_not_active", "campaign_canceled": "canceled", "something_new": "something_new",
	} {
		if got := campaigns.SkipReason(code); got != want {
			t.Errorf("SkipReason(%q) = %q, want %q", code, got, want)
		}
	}
}
