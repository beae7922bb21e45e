package jobs

import (
	"time"

	"github.com/riverqueue/river"
)

// periodic schedules a job of args every interval and once at start, with
// at most one job a period (River's UniqueOpts.ByPeriod). maxAttempts 0
// leaves River's default number of attempts.
func periodic(interval time.Duration, args river.JobArgs, maxAttempts int) *river.PeriodicJob {
	return river.NewPeriodicJob(river.PeriodicInterval(interval),
		func() (river.JobArgs, *river.InsertOpts) {
			return args, &river.InsertOpts{
				MaxAttempts: maxAttempts,
				UniqueOpts:  river.UniqueOpts{ByPeriod: interval},
			}
		},
		&river.PeriodicJobOpts{RunOnStart: true})
}
