package accounts

import (
	"context"
	"fmt"
	"time"
)

// PurgeRefreshTokens deletes refresh tokens that expired more than a day ago
// (the day keeps recently expired tokens around for reuse detection), for
// the housekeeping job.
func (s *Service) PurgeRefreshTokens(ctx context.Context, now time.Time) (int64, error) {
	tag, err := s.pool.Exec(ctx, `DELETE FROM central.refresh_tokens WHERE expires_at < $1`, now.Add(-24*time.Hour))
	if err != nil {
		return 0, fmt.Errorf("purge refresh tokens: %w", err)
	}
	return tag.RowsAffected(), nil
}

// PurgeLoginThrottle deletes login counters whose window started more than a
// day ago (longer than any sensible window), for the housekeeping job.
func (s *Service) PurgeLoginThrottle(ctx context.Context, now time.Time) (int64, error) {
	tag, err := s.pool.Exec(ctx, `DELETE FROM central.login_throttle WHERE window_start < $1`, now.Add(-24*time.Hour))
	if err != nil {
		return 0, fmt.Errorf("purge login throttle: %w", err)
	}
	return tag.RowsAffected(), nil
}
