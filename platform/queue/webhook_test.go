package queue

import (
	"testing"
	"time"
)

// Webhook deliveries have their own queue, and River's bound on failed
// runs lies past the service's 24 hours of retries even if every backoff
// comes out at its shortest (−10%).
func TestWebhookDeliveryArgs(t *testing.T) {
	t.Parallel()
	opts := (WebhookDeliveryArgs{}).InsertOpts()
	if opts.Queue != QueueWebhooks || WebhookDeliveryJob(WebhookDeliveryArgs{}).InsertOpts.Queue != QueueWebhooks {
		t.Fatal("webhook deliveries must go to their own queue")
	}
	var shortest time.Duration
	for attempt := 1; attempt < opts.MaxAttempts; attempt++ {
		d := min(WebhookRetryBase<<min(attempt-1, 30), WebhookRetryMax)
		shortest += d * 9 / 10
	}
	if shortest < 24*time.Hour {
		t.Fatalf("%d attempts span at least %s, want at least 24h", opts.MaxAttempts, shortest)
	}
}
