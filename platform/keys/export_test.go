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
