package httpnet_test

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bizmsg/platform/platform/apperr"
	"github.com/bizmsg/platform/platform/network"
	"github.com/bizmsg/platform/platform/network/httpnet"
)

func TestDecode(t *testing.T) {
	t.Parallel()
	occurred := time.Date(2026, 11, 22, 14, 3, 9, 0, time.UTC)
	received := time.Date(2026, 11, 22, 15, 0, 0, 0, time.UTC)
	readAt := time.Date(2026, 11, 22, 14, 5, 0, 0, time.FixedZone("CET", 3600))
	inbound := `{"id":"msg_77","from_phone":"+1 (415) 555-0002","to_phone":"+14155550001","conversation_id":311,` +
		`"type":"text","content":"Is it shipped?"}`
	tests := []struct {
		name     string
		typ      string
		data     string
		occurred *time.Time
		// One of: a receipt, an inbound message, or an error.
		receipt *network.Receipt
		inbound *network.Inbound
		kind    apperr.Kind
		code    string
		fields  []string
	}{
		{name: "delivered", typ: httpnet.EventMessageDelivered, data: `{"reference":"tenant_1:5"}`, occurred: &occurred,
			receipt: &network.Receipt{Reference: "tenant_1:5", Status: network.ReceiptDelivered, At: occurred}},
		{name: "failed", typ: httpnet.EventMessageFailed, data: `{"reference":"tenant_1:5","error_code":"gone","error_message":"Gone."}`,
			receipt: &network.Receipt{Reference: "tenant_1:5", Status: network.ReceiptFailed, At: received, ErrorCode: "gone", ErrorMessage: "Gone."}},
		{name: "read at", typ: httpnet.EventMessageRead, data: `{"reference":"tenant_1:5","read_at":"2026-11-22T14:05:00+01:00"}`, occurred: &occurred,
			receipt: &network.Receipt{Reference: "tenant_1:5", Status: network.ReceiptRead, At: readAt}},
		{name: "read, occurred", typ: httpnet.EventMessageRead, data: `{"reference":"otp:x"}`, occurred: &occurred,
			receipt: &network.Receipt{Reference: "otp:x", Status: network.ReceiptRead, At: occurred}},
		{name: "read, received", typ: httpnet.EventMessageRead, data: `{"reference":"r"}`,
			receipt: &network.Receipt{Reference: "r", Status: network.ReceiptRead, At: received}},
		{name: "read without reference", typ: httpnet.EventMessageRead, data: `{"read_at":null}`,
			kind: apperr.KindInvalid, code: "validation_failed", fields: []string{"data.reference"}},
		{name: "read at not RFC 3339", typ: httpnet.EventMessageRead, data: `{"reference":"r","read_at":"now"}`,
			kind: apperr.KindMalformed, code: "malformed_json"},
		{name: "received", typ: httpnet.EventMessageReceived, data: inbound, occurred: &occurred,
			inbound: &network.Inbound{ID: "msg_77", FromPhone: "+14155550002", ToPhone: "+14155550001", ConversationID: 311,
				Media: network.Media{Type: "text", Content: "Is it shipped?"}, At: occurred}},
		{name: "received media, sent at", typ: httpnet.EventMessageReceived,
			data: `{"id":"9","from_phone":"+14155550002","to_phone":"+14155550001","conversation_id":3,"type":"voice",` +
				`"content":"https://cdn.example/v.ogg","file_name":"v.ogg","file_size":4096,"file_type":"audio/ogg","duration":12,` +
				`"sent_at":"2026-11-22T14:05:00+01:00"}`,
			inbound: &network.Inbound{ID: "9", FromPhone: "+14155550002", ToPhone: "+14155550001", ConversationID: 3,
				Media: network.Media{Type: "voice", Content: "https://cdn.example/v.ogg", FileName: "v.ogg", FileSize: 4096, FileType: "audio/ogg", Duration: 12}, At: readAt}},
		{name: "received, nothing", typ: httpnet.EventMessageReceived, data: `{}`,
			kind: apperr.KindInvalid, code: "validation_failed",
			fields: []string{"data.content", "data.conversation_id", "data.from_phone", "data.id", "data.to_phone", "data.type"}},
		{name: "received, bad values", typ: httpnet.EventMessageReceived,
			data: `{"id":"x","from_phone":"12","to_phone":"+1 nope","conversation_id":-1,"type":"fax","content":"c",` +
				`"file_size":-1,"duration":-2}`,
			kind: apperr.KindInvalid, code: "validation_failed",
			fields: []string{"data.conversation_id", "data.duration", "data.file_size", "data.from_phone", "data.to_phone", "data.type"}},
		{name: "received, id too long", typ: httpnet.EventMessageReceived,
			data: `{"id":"` + strings.Repeat("x", 256) + `","from_phone":"+14155550002","to_phone":"+14155550001",` +
				`"conversation_id":3,"type":"text","content":"c"}`,
			kind: apperr.KindInvalid, code: "validation_failed", fields: []string{"data.id"}},
		{name: "received, wrong JSON type", typ: httpnet.EventMessageReceived, data: `{"conversation_id":"311"}`,
			kind: apperr.KindInvalid, code: "validation_failed", fields: []string{"data.conversation_id"}},
		{name: "received, sent at not RFC 3339", typ: httpnet.EventMessageReceived, data: `{"sent_at":"today"}`,
			kind: apperr.KindMalformed, code: "malformed_json"},
		{name: "received, data not an object", typ: httpnet.EventMessageReceived, data: `[]`,
			kind: apperr.KindInvalid, code: "validation_failed", fields: []string{"data"}},
		{name: "unknown type", typ: "message.exploded", data: `{}`, kind: apperr.KindInvalid, code: httpnet.CodeUnknownEventType},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			d, err := httpnet.Decode(httpnet.Event{ID: "evt_1", Type: tt.typ, OccurredAt: tt.occurred, Data: json.RawMessage(tt.data)})
			if tt.code != "" {
				e, ok := apperr.As(err)
				if !ok || e.Kind != tt.kind || e.Code != tt.code || !slices.Equal(slices.Sorted(maps.Keys(e.Fields)), tt.fields) {
					t.Fatalf("err = %v (fields %v), want %s %s on %v", err, fieldsOf(err), tt.kind, tt.code, tt.fields)
				}
				return
			}
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			r, isReceipt := d.Receipt(received)
			m, isInbound := d.Inbound(received)
			switch {
			case tt.receipt != nil && (!isReceipt || isInbound || r.Reference != tt.receipt.Reference ||
				r.Status != tt.receipt.Status || !r.At.Equal(tt.receipt.At) || r.At.Location() != time.UTC ||
				r.ErrorCode != tt.receipt.ErrorCode || r.ErrorMessage != tt.receipt.ErrorMessage):
				t.Fatalf("receipt = %+v (%v), inbound %v; want %+v", r, isReceipt, isInbound, *tt.receipt)
			case tt.inbound != nil:
				at := m.At
				m.At = tt.inbound.At
				if !isInbound || isReceipt || m != *tt.inbound || !at.Equal(tt.inbound.At) || at.Location() != time.UTC {
					t.Fatalf("inbound = %+v at %v (%v), receipt %v; want %+v", m, at, isInbound, isReceipt, *tt.inbound)
				}
			}
		})
	}
	t.Run("account verified is neither", func(t *testing.T) {
		t.Parallel()
		d, err := httpnet.Decode(httpnet.Event{ID: "e", Type: httpnet.EventAccountVerified, Data: json.RawMessage(`{"phone":"+14155550001"}`)})
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := d.Receipt(received); ok {
			t.Error("account.verified is a receipt")
		}
		if _, ok := d.Inbound(received); ok {
			t.Error("account.verified is an inbound message")
		}
	})
}

func fieldsOf(err error) map[string][]string {
	if e, ok := apperr.As(err); ok {
		return e.Fields
	}
	return nil
}
