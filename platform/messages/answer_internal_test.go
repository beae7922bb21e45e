package messages

import (
	"encoding/json"
	"testing"
	"time"
)

// The answer stored under an Idempotency-Key is what the doors answered
// before they rendered it themselves, json.Marshal of {"data": message},
// and a replay's resource is its middle, unchanged: the doors' 202 body
// {"data":<resource>} is then byte for byte the first answer, for keys
// stored by this version and by the one before.
func TestStoredAnswerRoundTrip(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 22, 14, 3, 5, 0, time.UTC)
	r := &row{Message: fullMessage()}
	r.CreatedAt = at
	res, err := render(r)
	if err != nil {
		t.Fatal(err)
	}
	before, err := json.Marshal(struct {
		Data Message `json:"data"`
	}{r.message()})
	if err != nil {
		t.Fatal(err)
	}
	if got := storedBody(res.Resource); string(got) != string(before) {
		t.Fatalf("stored %s\nwant     %s", got, before)
	}
	back, ok := resourceOf(before)
	if !ok || string(back) != string(res.Resource) {
		t.Fatalf("resource of the stored answer: %s %v", back, ok)
	}
	for _, bad := range []string{``, `{}`, `{"data":}`, `[{"data":1}]`} {
		if _, ok := resourceOf([]byte(bad)); ok {
			t.Errorf("resourceOf(%s) accepted", bad)
		}
	}
}
