package webhooks

import (
	"encoding/json"
	"testing"
	"time"
)

// rawResource is data that renders itself: AppendJSON appends its bytes,
// MarshalJSON returns them (as messages.Message does).
type rawResource string

func (r rawResource) AppendJSON(b []byte) []byte   { return append(b, r...) }
func (r rawResource) MarshalJSON() ([]byte, error) { return []byte(r), nil }

// TestMarshalPayload: a payload whose data appends itself is byte for byte
// what encoding/json writes for the same event, the timestamp in UTC to the
// microsecond.
func TestMarshalPayload(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 26, 16, 4, 5, 987654321, time.FixedZone("CET", 3600))
	for name, tc := range map[string]struct {
		typ  string
		at   time.Time
		data any
	}{
		"message":        {EventMessageSent, at, rawResource(`{"id":1,"content":"\u003cb\u003e"}`)},
		"whole second":   {EventMessageRead, at.Truncate(time.Second), rawResource(`{}`)},
		"plain resource": {EventAPIKeyExpiring, at, map[string]any{"id": 7, "name": "<k>"}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got, err := marshalPayload(tc.typ, tc.at, tc.data)
			if err != nil {
				t.Fatal(err)
			}
			want, err := json.Marshal(payload{Type: tc.typ,
				Timestamp: tc.at.UTC().Truncate(time.Microsecond).Format(time.RFC3339Nano), Data: tc.data})
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != string(want) {
				t.Fatalf("marshalPayload:\n got %s\nwant %s", got, want)
			}
		})
	}
}
