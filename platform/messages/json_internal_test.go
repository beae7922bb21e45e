package messages

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/bizmsg/platform/platform/clock"
	"github.com/bizmsg/platform/platform/queue"
)

// referenceJSON is the message resource as encoding/json renders it from
// tagged fields: the shape docs/api.md documents, which AppendJSON must
// write byte for byte.
type referenceJSON struct {
	ID              int64         `json:"id"`
	SenderNumberID  int64         `json:"sender_number_id"`
	RecipientUserID *int64        `json:"recipient_user_id"`
	ConversationID  *int64        `json:"conversation_id"`
	MessageID       *int64        `json:"message_id"`
	MessageType     string        `json:"message_type"`
	Content         string        `json:"content"`
	Status          string        `json:"status"`
	SentAt          *string       `json:"sent_at"`
	ToPhone         string        `json:"to_phone"`
	FileName        *string       `json:"file_name"`
	FileSize        *int64        `json:"file_size"`
	FileType        *string       `json:"file_type"`
	Duration        *int          `json:"duration"`
	ClientReference *string       `json:"client_reference"`
	ErrorCode       *string       `json:"error_code"`
	ErrorMessage    *string       `json:"error_message"`
	CreatedAt       string        `json:"created_at"`
	DeliveredAt     *string       `json:"delivered_at"`
	FailedAt        *string       `json:"failed_at"`
	Direction       string        `json:"direction"`
	FromPhone       *string       `json:"from_phone"`
	ReadAt          *string       `json:"read_at"`
	ReceivedAt      *string       `json:"received_at"`
	TemplateID      *int64        `json:"template_id"`
	CampaignID      *int64        `json:"campaign_id"`
	SendAt          *string       `json:"send_at"`
	CanceledAt      *string       `json:"canceled_at"`
	Delivery        *referenceJob `json:"delivery,omitempty"`
}

type referenceJob struct {
	State         string  `json:"state"`
	Attempts      int     `json:"attempts"`
	LastError     *string `json:"last_error"`
	LastAttemptAt *string `json:"last_attempt_at"`
	NextAttemptAt *string `json:"next_attempt_at"`
}

func referenceMarshal(t testing.TB, m Message) string {
	t.Helper()
	r := referenceJSON{
		ID: m.ID, SenderNumberID: m.SenderNumberID, RecipientUserID: m.RecipientUserID,
		ConversationID: m.ConversationID, MessageID: m.NetworkMessageID, MessageType: m.Type,
		Content: m.Content, Status: m.Status, SentAt: clock.FormatPtr(m.SentAt), ToPhone: m.ToPhone,
		FileName: m.FileName, FileSize: m.FileSize, FileType: m.FileType, Duration: m.Duration,
		ClientReference: m.ClientReference, ErrorCode: m.ErrorCode, ErrorMessage: m.ErrorMessage,
		CreatedAt: clock.Format(m.CreatedAt), DeliveredAt: clock.FormatPtr(m.DeliveredAt),
		FailedAt: clock.FormatPtr(m.FailedAt), Direction: m.Direction, FromPhone: m.FromPhone,
		ReadAt: clock.FormatPtr(m.ReadAt), ReceivedAt: clock.FormatPtr(m.ReceivedAt), TemplateID: m.TemplateID, CampaignID: m.CampaignID,
		SendAt: clock.FormatPtr(m.SendAt), CanceledAt: clock.FormatPtr(m.CanceledAt),
	}
	if d := m.Delivery; d != nil {
		r.Delivery = &referenceJob{State: d.State, Attempts: d.Attempts,
			LastAttemptAt: clock.FormatPtr(d.LastAttemptAt), NextAttemptAt: clock.FormatPtr(d.NextAttemptAt)}
		if d.LastError != "" {
			r.Delivery.LastError = &d.LastError
		}
	}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatalf("reference marshal: %v", err)
	}
	return string(b)
}

func ptr[T any](v T) *T { return &v }

// fullMessage is a message with every field set, times in a zone other
// than UTC and with fractions of a second.
func fullMessage() Message {
	at := time.Date(2026, 11, 26, 16, 4, 5, 987654321, time.FixedZone("CET", 3600))
	return Message{
		ID: 9007199254740993, Direction: DirectionInbound, SenderNumberID: 42, ToPhone: "+14155550100",
		FromPhone: ptr("+14155550101"), RecipientUserID: ptr(int64(-7)), ConversationID: ptr(int64(0)),
		NetworkMessageID: ptr(int64(123)), Type: "document", Content: "https://cdn.example/a.pdf?x=1&y=<2>",
		FileName: ptr(`"quoted"\name.pdf`), FileSize: ptr(int64(1 << 40)), FileType: ptr("application/pdf"),
		Duration: ptr(-3), Status: StatusFailed, ErrorCode: ptr("recipient_unreachable"),
		ErrorMessage: ptr("line\nbreak\ttab\u0001\u2028\u2029 é 😀 \xff"), ClientReference: ptr(""),
		CreatedAt: at, SentAt: ptr(at.Add(time.Second)), DeliveredAt: ptr(at.Add(2 * time.Second)),
		ReadAt: ptr(at.Add(3 * time.Second)), FailedAt: ptr(at.Add(4 * time.Second)), ReceivedAt: ptr(at),
		TemplateID: ptr(int64(77)), CampaignID: ptr(int64(5)), SendAt: ptr(at.Add(-time.Hour)), CanceledAt: ptr(at.Add(5 * time.Second)),
	}
}

// TestAppendJSONMatchesEncodingJSON: AppendJSON (and MarshalJSON) write
// exactly what encoding/json writes for the documented fields.
func TestAppendJSONMatchesEncodingJSON(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 26, 15, 0, 0, 0, time.UTC)
	full := fullMessage()
	withJob, withFailedJob := full, full
	withJob.Delivery = &queue.DeliveryReport{State: "retrying", Attempts: 2, NextAttemptAt: &at}
	withFailedJob.Delivery = &queue.DeliveryReport{State: "retrying", Attempts: 3, LastError: "network <timeout> & \"more\"",
		LastAttemptAt: &full.CreatedAt, NextAttemptAt: &at}
	for name, m := range map[string]Message{
		"zero":            {},
		"queued text":     {ID: 1, Direction: DirectionOutbound, SenderNumberID: 2, ToPhone: "+14155550100", Type: "text", Content: "hi", Status: StatusQueued, CreatedAt: at},
		"every field":     full,
		"delivery job":    withJob,
		"failed attempts": withFailedJob,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			want := referenceMarshal(t, m)
			if got := string(m.AppendJSON(nil)); got != want {
				t.Fatalf("AppendJSON:\n got %s\nwant %s", got, want)
			}
			got, err := json.Marshal(m)
			if err != nil || string(got) != want {
				t.Fatalf("json.Marshal: %v\n got %s\nwant %s", err, got, want)
			}
			if got := string(m.AppendJSON([]byte("prefix"))); got != "prefix"+want {
				t.Fatalf("AppendJSON after a prefix: %s", got)
			}
		})
	}
}

// FuzzAppendJSON: any strings and numbers in a message render as
// encoding/json renders them.
func FuzzAppendJSON(f *testing.F) {
	f.Add("hi", "+14155550100", "text", "ref", int64(1), int64(2), 3, int64(4))
	f.Add("<script>&\"\\\x00\x1f\x7f\u2028\xc3", "", "é", "😀", int64(-1), int64(0), 0, int64(-1<<63))
	f.Fuzz(func(t *testing.T, content, phone, typ, ref string, id, conv int64, dur int, size int64) {
		m := fullMessage()
		m.Content, m.ToPhone, m.Type, m.ClientReference, m.FromPhone = content, phone, typ, &ref, &content
		m.ID, m.ConversationID, m.Duration, m.FileSize = id, &conv, &dur, &size
		if got, want := string(m.AppendJSON(nil)), referenceMarshal(t, m); got != want {
			t.Fatalf("AppendJSON:\n got %s\nwant %s", got, want)
		}
	})
}

// BenchmarkMessageJSON compares AppendJSON with encoding/json's rendering of
// the same fields, for a sent text message (what a message.sent payload
// carries).
func BenchmarkMessageJSON(b *testing.B) {
	at := time.Date(2026, 11, 26, 15, 0, 0, 0, time.UTC)
	m := Message{ID: 123456, Direction: DirectionOutbound, SenderNumberID: 3, ToPhone: "+14155550100",
		RecipientUserID: ptr(int64(7)), ConversationID: ptr(int64(9)), NetworkMessageID: ptr(int64(11)),
		Type: "text", Content: "Hello there, this is a test message of moderate length.", Status: StatusSent,
		CreatedAt: at, SentAt: &at}
	b.Run("AppendJSON", func(b *testing.B) {
		b.ReportAllocs()
		buf := make([]byte, 0, 1024)
		for b.Loop() {
			buf = m.AppendJSON(buf[:0])
		}
	})
	b.Run("encoding/json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			referenceMarshal(b, m)
		}
	})
}
