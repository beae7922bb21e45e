package keys

import (
	"context"
	"time"
)

// TouchKeys runs one touch statement over ids, as a run of the Service's
// toucher does.
func (s *Service) TouchKeys(ctx context.Context, ids []int64) ([]time.Time, error) {
	return s.touchKeys(ctx, struct{}{}, ids)
}

// TouchesWaiting is how many touches wait for the toucher's next run.
func (s *Service) TouchesWaiting() int { return s.toucher.Waiting(struct{}{}) }

// FindsWaiting is how many key reads wait for the finder's next run.
func (s *Service) FindsWaiting() int { return s.finder.Waiting(struct{}{}) }
