package idempotency

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/bizmsg/platform/platform/messages"
)

// The answer stored under an Idempotency-Key is what the doors answered
// before they rendered it themselves, json.Marshal of {"data": message},
// and a replay's resource is its middle, unchanged: the doors' 202 body
// {"data":<resource>} is then byte for byte the first answer, for keys
// stored by this version and by the one before.
func TestStoredAnswerRoundTrip(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 22, 14, 3, 5, 0, time.UTC)
	m := messages.Message{ID: 7, Direction: messages.DirectionOutbound, SenderNumberID: 2,
		ToPhone: "+14155550100", Type: messages.TypeText, Content: "<b>&\u2028 \"hi\"</b>", Status: messages.StatusQueued,
		CreatedAt: at}
	resource, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	before, err := json.Marshal(struct {
		Data messages.Message `json:"data"`
	}{m})
	if err != nil {
		t.Fatal(err)
	}
	if got := Body(resource); string(got) != string(before) {
		t.Fatalf("stored %s\nwant     %s", got, before)
	}
	back, ok := resourceOf(before)
	if !ok || string(back) != string(resource) {
		t.Fatalf("resource of the stored answer: %s %v", back, ok)
	}
	for _, bad := range []string{``, `{}`, `{"data":}`, `[{"data":1}]`} {
		if _, ok := resourceOf([]byte(bad)); ok {
			t.Errorf("resourceOf(%s) accepted", bad)
		}
	}
}
