package app

import (
	"github.com/riverqueue/river"

	"github.com/bizmsg/platform/jobs"
	"github.com/bizmsg/platform/platform/queue"
	"github.com/bizmsg/platform/platform/senders"
)

// senderNumbers builds the messaging network (unless already set) and the
// sender-number service shared by both APIs and the workers. It queues OTP
// jobs and its coordinator writes through a.Outbox, the job outbox, which
// must exist (non-nil) before it is called and apply senders.KindCentral
// (jobOutbox registers it).
func (a *App) senderNumbers() error {
	if a.Network == nil {
		n, err := a.newNetwork()
		if err != nil {
			return err
		}
		a.Network = n
	}
	svc, err := senders.New(senders.Config{
		DB:      a.DB,
		Jobs:    a.Outbox,
		Network: a.Network,
		Secret:  a.cfg.APIKeyPepper,
		Clock:   a.clock,
		Logger:  a.log,
		Events:  a.Webhooks,
	})
	if err != nil {
		return err
	}
	a.Senders = svc
	return nil
}

// senderWorkers registers the OTP delivery worker and the account-verification
// sweep (scheduled every SENDER_SWEEP_INTERVAL by riverClient).
func (a *App) senderWorkers(workers *river.Workers) {
	river.AddWorker(workers, &jobs.NetworkWorker[queue.OTPArgs]{Call: a.Senders.DeliverOTP})
	river.AddWorker(workers, &jobs.AccountSweepWorker{Sweeper: a.Senders, Logger: a.log})
}
