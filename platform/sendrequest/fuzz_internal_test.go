package sendrequest

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/bizmsg/platform/platform/fuzzcheck"
	"github.com/bizmsg/platform/platform/httpx"
	"github.com/bizmsg/platform/platform/messages"
	"github.com/bizmsg/platform/platform/phone"
)

// sendFields are the fields a send's refusal may name.
var sendFields = []string{"to_phone", "type", "sender_number_id", "sender_phone", "content", "duration",
	"file_name", "file_size", "file_type", "client_reference", IdempotencyKeyHeader}

// FuzzSendRequest: any body and Idempotency-Key of POST /messages is
// decoded and validated (httpx.BindJSON, SendRequest.Validate, as the
// handler and acceptance.Send do) into a normalised send, or refused as the client's
// fault naming the fields; a control character in a field is refused naming
// it (a text message's content refuses NUL only: newlines and tabs are its
// own; phones drop white space around them).
func FuzzSendRequest(f *testing.F) {
	for _, s := range []struct{ body, key string }{
		{`{"to_phone":"+14155550100","type":"text","sender_number_id":1,"content":"hi"}`, ""},
		{`{"to_phone":"+1 (415) 555-0100","type":"text","sender_phone":"+14155550101","content":"line\nnext","client_reference":"o-1"}`, "k-1"},
		{`{"to_phone":"+14155550100","type":"image","sender_number_id":1,"content":"https://cdn.example/a.png","file_name":"a.png","file_size":100,"file_type":"image/png"}`, ""},
		{`{"to_phone":"+14155550100","type":"voice","sender_number_id":1,"content":"https://cdn.example/a.ogg","file_name":"a.ogg","file_size":100,"file_type":"audio/ogg","duration":12}`, ""},
		{`{"to_phone":"+14155550100","type":"document","sender_number_id":1,"content":"https://u:p@cdn.example/a.pdf","file_name":"../a.pdf","file_size":0,"file_type":"*/*"}`, ""},
		{`{"to_phone":"+14155550100","type":"text","sender_number_id":1,"content":"a\u0000b"}`, ""},
		{`{"to_phone":"+1415555\u00010100","type":"te\u0007xt","sender_number_id":1,"content":"x","client_reference":"r\u001f"}`, "k\u007f"},
		{`{"to_phone":14155550100,"type":["text"],"sender_number_id":"1","content":{},"duration":1.5}`, ""},
		{`{"to_phone":"+14155550100\n","type":"text","sender_number_id":-1,"content":"   "}`, ""},
		{`{}`, ""}, {`[]`, ""}, {`null`, ""}, {`{"content":"x"} {}`, ""}, {``, ""},
	} {
		f.Add([]byte(s.body), s.key)
	}
	f.Fuzz(func(t *testing.T, body []byte, key string) {
		var req SendRequest
		if err := httpx.BindJSON(fuzzcheck.JSONContext(body), &req); err != nil {
			fuzzcheck.Refusal(t, err, sendFields...)
			return
		}
		req.IdempotencyKey = key
		d, err := req.Validate(time.Now())
		if err != nil {
			fuzzcheck.Refusal(t, err, sendFields...)
			wantControlRefused(t, err, body, key)
			return
		}
		wantControlRefused(t, nil, body, key)
		checkDraft(t, d)
		// The draft is the normalised request: validating what it holds
		// gives it again.
		again := SendRequest{ToPhone: &d.ToPhone, Type: &d.Type, Content: &d.Content, FileName: d.FileName,
			FileSize: d.FileSize, FileType: d.FileType, ClientReference: d.ClientReference, IdempotencyKey: key}
		if d.Sender.ID > 0 {
			again.SenderNumberID = &d.Sender.ID
		}
		if d.Sender.Phone != "" {
			again.SenderPhone = &d.Sender.Phone
		}
		if d.Duration != nil {
			n := int64(*d.Duration)
			again.Duration = &n
		}
		d2, err := again.Validate(time.Now())
		if err != nil || string(d2.Fingerprint()) != string(d.Fingerprint()) {
			t.Fatalf("the draft %+v does not validate to itself: %+v, %v", d, d2, err)
		}
	})
}

// wantControlRefused checks that every field of body holding a control
// character (beyond what the field allows) is named in err.
func wantControlRefused(t *testing.T, err error, body []byte, key string) {
	t.Helper()
	var raw map[string]json.RawMessage
	if json.Unmarshal(body, &raw) != nil {
		return
	}
	str := func(name string) (string, bool) {
		var s string
		v, ok := raw[name]
		return s, ok && json.Unmarshal(v, &s) == nil
	}
	typ, _ := str("type")
	check := func(name string, bad func(string) bool) {
		if s, ok := str(name); ok && bad(s) {
			if err == nil {
				t.Fatalf("%s %q accepted", name, s)
			}
			fuzzcheck.Names(t, err, name)
		}
	}
	check("to_phone", fuzzcheck.InnerControl)
	check("sender_phone", fuzzcheck.InnerControl)
	check("type", fuzzcheck.Control)
	check("client_reference", fuzzcheck.Control)
	switch typ {
	case messages.TypeText:
		check("content", fuzzcheck.NUL)
	case messages.TypeImage, messages.TypeVoice, messages.TypeDocument:
		check("content", fuzzcheck.Control)
		check("file_name", fuzzcheck.Control)
		check("file_type", fuzzcheck.Control)
	}
	if key != "" && fuzzcheck.Control(key) {
		if err == nil {
			t.Fatalf("Idempotency-Key %q accepted", key)
		}
		fuzzcheck.Names(t, err, IdempotencyKeyHeader)
	}
}

// checkDraft holds an accepted send to the rules of docs/api.md, §Sending.
func checkDraft(t *testing.T, d Send) {
	t.Helper()
	if p, err := phone.Normalize(d.ToPhone); err != nil || p != d.ToPhone {
		t.Fatalf("to_phone %q is not E.164", d.ToPhone)
	}
	if d.Sender.ID < 0 || (d.Sender.ID == 0 && d.Sender.Phone == "") {
		t.Fatalf("sender %+v", d.Sender)
	}
	if d.Sender.Phone != "" {
		if p, err := phone.Normalize(d.Sender.Phone); err != nil || p != d.Sender.Phone {
			t.Fatalf("sender_phone %q is not E.164", d.Sender.Phone)
		}
	}
	if strings.TrimSpace(d.Content) == "" || fuzzcheck.NUL(d.Content) {
		t.Fatalf("content %q", d.Content)
	}
	if d.ClientReference != nil && (fuzzcheck.Control(*d.ClientReference) || utf8.RuneCountInString(*d.ClientReference) > messages.MaxClientReferenceLength) {
		t.Fatalf("client_reference %q", *d.ClientReference)
	}
	switch d.Type {
	case messages.TypeText:
		if utf8.RuneCountInString(d.Content) > MaxTextLength || d.FileName != nil || d.FileSize != nil || d.FileType != nil {
			t.Fatalf("text draft %+v", d)
		}
	case messages.TypeImage, messages.TypeVoice, messages.TypeDocument:
		if !strings.HasPrefix(strings.ToLower(d.Content), "https://") || fuzzcheck.Control(d.Content) {
			t.Fatalf("media URL %q", d.Content)
		}
		if d.FileName == nil || fuzzcheck.Control(*d.FileName) || strings.ContainsAny(*d.FileName, `/\`) {
			t.Fatalf("file_name %v", d.FileName)
		}
		if d.FileSize == nil || *d.FileSize < 1 || *d.FileSize > maxFileSize(d.Type) {
			t.Fatalf("file_size %v", d.FileSize)
		}
		if d.FileType == nil || fuzzcheck.Control(*d.FileType) {
			t.Fatalf("file_type %v", d.FileType)
		}
		if (d.Type == messages.TypeVoice) != (d.Duration != nil) {
			t.Fatalf("duration %v for %s", d.Duration, d.Type)
		}
	default:
		t.Fatalf("type %q", d.Type)
	}
	if d.Duration != nil && (*d.Duration < MinDuration || *d.Duration > MaxDuration) {
		t.Fatalf("duration %d", *d.Duration)
	}
}
