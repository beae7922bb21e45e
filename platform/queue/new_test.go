package queue_test

import (
	"strings"
	"testing"

	"github.com/bizmsg/platform/platform/queue"
)

func TestNewClientRequiresPool(t *testing.T) {
	t.Parallel()
	if _, err := queue.NewClient(queue.Config{}); err == nil || !strings.Contains(err.Error(), "Config.Pool is required") {
		t.Fatalf("NewClient without a pool = %v", err)
	}
}
