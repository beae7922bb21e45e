package delivery

import (
	"context"
	"errors"
	"time"

	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/queue"
)

// DeliverTogether runs the delivery jobs of messages ids of tenant t (job
// ids 1000+i, at attempt) as one delivery batch, as if
// they had gathered in the tenant's batcher, and returns each one's outcome.
func (s *Service) DeliverTogether(ctx context.Context, t db.Tenant, ids []int64, attempt int) ([]error, error) {
	items := make([]pendingDelivery, len(ids))
	for i, id := range ids {
		items[i] = pendingDelivery{id: id, own: true, at: queue.DeliveryAttempt{JobID: 1000 + int64(i), Attempt: attempt, MaxAttempts: 5}}
	}
	out, err := s.deliverBatch(ctx, t, items)
	if err != nil {
		return nil, err
	}
	errs := make([]error, len(out))
	for i, o := range out {
		errs[i] = o.err
	}
	return errs, nil
}

// IsOrderWait reports whether a delivery's outcome is a wait for an earlier
// message of its conversation.
func IsOrderWait(err error) bool {
	var w *orderWaitError
	return errors.As(err, &w)
}

// SetMaxInlineWait changes Config.MaxInlineWait, between deliveries.
func (s *Service) SetMaxInlineWait(d time.Duration) { s.cfg.MaxInlineWait = d }
