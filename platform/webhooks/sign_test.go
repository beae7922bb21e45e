package webhooks

import (
	"encoding/base64"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

// Our signatures verify with the Standard Webhooks reference library, with
// each of the secrets that signed, and not with another.
func TestSignatureVerifiesWithTheReferenceLibrary(t *testing.T) {
	t.Parallel()
	current, previous, other := newSecret(), newSecret(), newSecret()
	body := []byte(`{"type":"message.delivered","timestamp":"2026-11-22T14:03:05Z","data":{"id":1}}`)
	id := newEventID()
	tests := []struct {
		name    string
		signers []string
		parts   int
	}{
		{"one secret", []string{current}, 1},
		{"during a rotation", []string{current, previous}, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			now := time.Now()
			sig, err := signature(tt.signers, id, now.Unix(), body)
			if err != nil {
				t.Fatal(err)
			}
			if n := len(strings.Split(sig, " ")); n != tt.parts {
				t.Fatalf("signature %q has %d parts, want %d", sig, n, tt.parts)
			}
			h := http.Header{}
			h.Set(standardwebhooks.HeaderWebhookID, id)
			h.Set(standardwebhooks.HeaderWebhookTimestamp, strconv.FormatInt(now.Unix(), 10))
			h.Set(standardwebhooks.HeaderWebhookSignature, sig)
			for _, secret := range tt.signers {
				wh, err := standardwebhooks.NewWebhook(secret)
				if err != nil {
					t.Fatal(err)
				}
				if err := wh.Verify(body, h); err != nil {
					t.Fatalf("the library refuses a signature by %s: %v", secret[:10], err)
				}
			}
			wh, err := standardwebhooks.NewWebhook(other)
			if err != nil {
				t.Fatal(err)
			}
			if err := wh.Verify(body, h); err == nil {
				t.Fatal("the library accepts the signature with a secret that did not sign")
			}
		})
	}
}

func TestSecretAndEventIDFormat(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for range 50 {
		s := newSecret()
		key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(s, SecretPrefix))
		if !strings.HasPrefix(s, SecretPrefix) || err != nil || len(key) < 24 || seen[s] {
			t.Fatalf("secret %q: decoded %d bytes, err %v, repeated %v", s, len(key), err, seen[s])
		}
		seen[s] = true
	}
	re := regexp.MustCompile(`^msg_[A-Z2-7]{26}$`)
	for range 50 {
		id := newEventID()
		if !re.MatchString(id) || seen[id] {
			t.Fatalf("event id %q", id)
		}
		seen[id] = true
	}
}
