package sendrequest

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bizmsg/platform/platform/apperr"
)

// decode builds a SendRequest from a JSON body, as the handler does.
func decode(t *testing.T, body string) *SendRequest {
	t.Helper()
	var r SendRequest
	if err := json.Unmarshal([]byte(body), &r); err != nil {
		t.Fatalf("decode %s: %v", body, err)
	}
	return &r
}

func fieldsOf(t *testing.T, err error) []string {
	t.Helper()
	if err == nil {
		return nil
	}
	e, ok := apperr.As(err)
	if !ok || e.Kind != apperr.KindInvalid || e.Code != "validation_failed" {
		t.Fatalf("error %v, want validation_failed", err)
	}
	var out []string
	for k := range e.Fields {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func TestValidate(t *testing.T) {
	t.Parallel()
	const to = `"to_phone":"+14155550002"`
	const img = `"sender_number_id":1,` + to + `,"type":"image","content":"https://x.example/a.png","file_name":"a.png","file_type":"image/png"`
	tests := []struct {
		name   string
		body   string
		key    string
		fields []string
	}{
		{"minimal text", `{"sender_number_id":1,` + to + `,"type":"text","content":"hi"}`, "", nil},
		{"null is absent", `{"sender_number_id":1,` + to + `,"type":"text","content":"hi","duration":null,"file_name":null}`, "", nil},
		{"unknown fields ignored", `{"sender_number_id":1,` + to + `,"type":"text","content":"hi","status":"sent","x":1}`, "", nil},
		{"everything missing", `{}`, "", []string{"sender_number_id", "sender_phone", "to_phone", "type"}},
		{"type errors all reported", `{"sender_number_id":"1","to_phone":1,"type":true,"content":[],"file_size":"9","duration":1.5}`, "",
			[]string{"content", "duration", "file_size", "sender_number_id", "to_phone", "type"}},
		{"text file fields ignored", `{"sender_number_id":1,` + to + `,"type":"text","content":"hi","file_name":"../x","file_size":-1}`, "", nil},
		{"text 4096 runes", `{"sender_number_id":1,` + to + `,"type":"text","content":"` + strings.Repeat("ش", 4096) + `"}`, "", nil},
		{"text with NUL", `{"sender_number_id":1,` + to + `,"type":"text","content":"a\u0000b"}`, "", []string{"content"}},
		{"text with newline and tab", `{"sender_number_id":1,` + to + `,"type":"text","content":"a\nb\tc"}`, "", nil},
		{"template", `{"sender_number_id":1,` + to + `,"type":"template","template":{"name":"a","language":"en","variables":{"1":"Ana"}}}`, "", nil},
		{"template without variables", `{"sender_number_id":1,` + to + `,"type":"template","template":{"name":"a","language":"en"}}`, "", nil},
		{"template missing", `{"sender_number_id":1,` + to + `,"type":"template"}`, "", []string{"template"}},
		{"template name and language missing", `{"sender_number_id":1,` + to + `,"type":"template","template":{}}`, "",
			[]string{"template.language", "template.name"}},
		{"template with content", `{"sender_number_id":1,` + to + `,"type":"template","content":"hi","template":{"name":"a","language":"en"}}`, "",
			[]string{"content"}},
		{"template of the wrong types", `{"sender_number_id":1,` + to + `,"type":"template","template":{"name":1,"language":"en","variables":{"1":2,"2":"b"}}}`, "",
			[]string{"template.name", "template.variables.1"}},
		{"template not an object", `{"sender_number_id":1,` + to + `,"type":"template","template":"a"}`, "", []string{"template"}},
		{"template on a text", `{"sender_number_id":1,` + to + `,"type":"text","content":"hi","template":{"name":"a","language":"en"}}`, "",
			[]string{"template"}},
		{"text 4097 runes", `{"sender_number_id":1,` + to + `,"type":"text","content":"` + strings.Repeat("ش", 4097) + `"}`, "", []string{"content"}},
		{"image ok", `{` + img + `,"file_size":5242880}`, "", nil},
		{"image too big", `{` + img + `,"file_size":5242881}`, "", []string{"file_size"}},
		{"image MIME with parameters", `{` + img + `,"file_size":1,"file_type":"IMAGE/PNG; q=1"}`, "", nil},
		{"image wildcard MIME", `{` + img + `,"file_size":1,"file_type":"image/*"}`, "", []string{"file_type"}},
		{"media URL ftp", `{` + img + `,"file_size":1,"content":"ftp://x.example/a"}`, "", []string{"content"}},
		{"media URL with a space", `{` + img + `,"file_size":1,"content":"https://x.example/a b"}`, "", []string{"content"}},
		{"voice without duration", `{"sender_number_id":1,` + to + `,"type":"voice","content":"https://x.example/v","file_name":"v","file_size":1,"file_type":"audio/ogg"}`, "",
			[]string{"duration"}},
		{"document any MIME, 100 MB", `{"sender_number_id":1,` + to + `,"type":"document","content":"https://x.example/d","file_name":"d.bin","file_size":104857600,"file_type":"application/octet-stream"}`, "", nil},
		{"document 100 MB + 1", `{"sender_number_id":1,` + to + `,"type":"document","content":"https://x.example/d","file_name":"d.bin","file_size":104857601,"file_type":"application/octet-stream"}`, "",
			[]string{"file_size"}},
		{"duration checked on text", `{"sender_number_id":1,` + to + `,"type":"text","content":"hi","duration":0}`, "", []string{"duration"}},
		{"client reference 128", `{"sender_number_id":1,` + to + `,"type":"text","content":"hi","client_reference":"` + strings.Repeat("r", 128) + `"}`, "", nil},
		{"client reference control", `{"sender_number_id":1,` + to + `,"type":"text","content":"hi","client_reference":"a\u0001"}`, "", []string{"client_reference"}},
		{"key 255", `{"sender_number_id":1,` + to + `,"type":"text","content":"hi"}`, strings.Repeat("k", 255), nil},
		{"key 256", `{"sender_number_id":1,` + to + `,"type":"text","content":"hi"}`, strings.Repeat("k", 256), []string{"Idempotency-Key"}},
		{"key not ASCII", `{"sender_number_id":1,` + to + `,"type":"text","content":"hi"}`, "ключ", []string{"Idempotency-Key"}},
		{"sender by phone", `{"sender_phone":"+1 415 555 0001",` + to + `,"type":"text","content":"hi"}`, "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := decode(t, tt.body)
			r.IdempotencyKey = tt.key
			_, err := r.Validate(time.Now())
			if got := fieldsOf(t, err); !slices.Equal(got, tt.fields) {
				t.Fatalf("field errors %v (%v), want %v", got, err, tt.fields)
			}
		})
	}
}

// The fingerprint identifies the normalised request: formatting does not
// change it, content does.
func TestFingerprint(t *testing.T) {
	t.Parallel()
	fp := func(body string) []byte {
		d, err := decode(t, body).Validate(time.Now())
		if err != nil {
			t.Fatal(err)
		}
		return d.Fingerprint()
	}
	a := fp(`{"sender_number_id":1,"to_phone":"+14155550002","type":"text","content":"hi"}`)
	b := fp(`{ "content":"hi", "type":"text", "to_phone":"+1 (415) 555-0002", "sender_number_id":1, "extra":true }`)
	c := fp(`{"sender_number_id":1,"to_phone":"+14155550002","type":"text","content":"hi!"}`)
	d := fp(`{"sender_number_id":1,"to_phone":"+14155550002","type":"text","content":"hi","client_reference":"r"}`)
	if !bytes.Equal(a, b) {
		t.Fatal("formatting changed the fingerprint")
	}
	if bytes.Equal(a, c) || bytes.Equal(a, d) {
		t.Fatal("a different request has the same fingerprint")
	}
}

// send_at (docs/api.md, §Scheduled sends): RFC 3339 with a zone, strictly
// after now, at most 35 days ahead; kept in UTC.
func TestCheckSendAt(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		raw  string
		want time.Time
		msg  string
	}{
		{"2026-11-28T12:00:01Z", now.Add(time.Second), ""},
		{"2026-11-28T13:00:00+01:00", now, "must be in the future"},
		{"2026-11-28T14:00:00+01:00", now.Add(time.Hour), ""},
		{"2026-11-28T12:00:00.5Z", now.Add(500 * time.Millisecond), ""},
		{"2026-11-28T12:00:00Z", time.Time{}, "must be in the future"},
		{"2026-11-27T12:00:00Z", time.Time{}, "must be in the future"},
		{"2027-01-02T12:00:00Z", now.Add(MaxScheduleAhead), ""},
		{"2027-01-02T12:00:01Z", time.Time{}, "must be at most 35 days ahead"},
		{"2026-11-28T13:00:00", time.Time{}, "must be an RFC 3339 time, such as 2026-11-22T14:03:05Z"},
		{"tomorrow", time.Time{}, "must be an RFC 3339 time, such as 2026-11-22T14:03:05Z"},
		{"", time.Time{}, "must be an RFC 3339 time, such as 2026-11-22T14:03:05Z"},
	}
	for _, tt := range tests {
		got, msg := checkSendAt(tt.raw, now)
		if msg != tt.msg || (msg == "" && (!got.Equal(tt.want) || got.Location() != time.UTC)) {
			t.Errorf("checkSendAt(%q) = %v, %q; want %v, %q", tt.raw, got, msg, tt.want, tt.msg)
		}
	}
}

// send_at joins the request's validation: its error is reported with the
// others, and the draft (hence the Idempotency-Key's fingerprint) carries it.
func TestValidateSendAt(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	_, err := decode(t, `{"to_phone": "nope", "type": "text", "sender_number_id": 1, "content": "hi",
		"send_at": "2026-11-27T12:00:00Z"}`).Validate(now)
	e, ok := apperr.As(err)
	if !ok || len(e.Fields["send_at"]) != 1 || len(e.Fields["to_phone"]) != 1 {
		t.Fatalf("validate = %v, want errors on send_at and to_phone", err)
	}
	d, err := decode(t, `{"to_phone": "+14155550100", "type": "text", "sender_number_id": 1, "content": "hi",
		"send_at": "2026-11-29T12:00:00Z"}`).Validate(now)
	if err != nil || d.SendAt == nil || !d.SendAt.Equal(now.Add(24*time.Hour)) {
		t.Fatalf("validate = %+v, %v", d, err)
	}
	plain, err := decode(t, `{"to_phone": "+14155550100", "type": "text", "sender_number_id": 1, "content": "hi"}`).Validate(now)
	if err != nil || bytes.Equal(plain.Fingerprint(), d.Fingerprint()) {
		t.Fatalf("a scheduled send and a send at once share a fingerprint (%v)", err)
	}
}
