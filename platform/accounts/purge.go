package accounts

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// PurgeRefreshTokens deletes refresh tokens that expired more than a day ago
// (the day keeps recently expired tokens around for reuse detection), for
// the housekeeping job.
func (s *Service) PurgeRefreshTokens(ctx context.Context, now time.Time) (int64, error) {
	res, err := s.db.Bun.NewDelete().Model((*refreshRow)(nil)).Where("expires_at < ?", now.Add(-24*time.Hour)).Exec(ctx)
	if err != nil {
		return 0, fmt.Errorf("purge refresh tokens: %w", err)
	}
	return rowsAffected(res, "purge refresh tokens")
}

// PurgeLoginThrottle deletes login counters whose window started more than a
// day ago (longer than any sensible window), for the housekeeping job.
func (s *Service) PurgeLoginThrottle(ctx context.Context, now time.Time) (int64, error) {
	res, err := s.db.Bun.NewDelete().Model((*throttleRow)(nil)).Where("window_start < ?", now.Add(-24*time.Hour)).Exec(ctx)
	if err != nil {
		return 0, fmt.Errorf("purge login throttle: %w", err)
	}
	return rowsAffected(res, "purge login throttle")
}

func rowsAffected(res sql.Result, what string) (int64, error) {
	n, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("%s: %w", what, err)
	}
	return n, nil
}
