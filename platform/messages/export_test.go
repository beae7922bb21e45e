package messages

import (
	"context"
	"errors"

	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/queue"
)

// DeliverTogether runs the delivery jobs of messages ids of tenant t (job
// ids 1000+i, at attempt) as one delivery batch, past their throttle, as if
// they had gathered in the tenant's batcher, and returns each one's outcome.
func (s *Service) DeliverTogether(ctx context.Context, t db.Tenant, ids []int64, attempt int) ([]error, error) {
	items := make([]pendingDelivery, len(ids))
	for i, id := range ids {
		items[i] = pendingDelivery{id: id, at: queue.DeliveryAttempt{JobID: 1000 + int64(i), Attempt: attempt, MaxAttempts: 5}}
	}
	return s.deliverBatch(ctx, t, items)
}

// IsOrderWait reports whether a delivery's outcome is a wait for an earlier
// message of its conversation.
func IsOrderWait(err error) bool {
	var w *orderWaitError
	return errors.As(err, &w)
}

// Parked is the number of deliveries waiting in their runs now for the run
// of an earlier message of their conversation in this process.
func (s *Service) Parked() int64 { return s.flights.parked.Load() }
