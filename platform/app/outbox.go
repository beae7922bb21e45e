package app

import (
	"context"
	"fmt"
	"maps"

	"github.com/bizmsg/platform/platform/consent"
	"github.com/bizmsg/platform/platform/joboutbox"
	"github.com/bizmsg/platform/platform/senders"
)

// jobOutbox builds the job outbox over a.River (docs/scaling.md, §Jobs):
// the services whose transactions write a tenant schema queue their jobs
// through it, so that on Citus no such transaction writes River's tables
// too, and the sender numbers and opt-outs their coordinator writes
// (senders.Central, consent.ApplyAudit). On one server it is direct (joboutbox.Config):
// River inserts the jobs in the writer's transaction, which is atomic
// there and costs no outbox row and no move, unless
// opts.OutboxOnOneServer keeps the outbox.
func (a *App) jobOutbox(ctx context.Context, opts Options) error {
	cfg := opts.Outbox
	citus, err := a.Migrator.Citus(ctx)
	if err != nil {
		return fmt.Errorf("job outbox: %w", err)
	}
	cfg.Direct = !citus && !opts.OutboxOnOneServer
	prep, err := a.newPrepared()
	if err != nil {
		return err
	}
	cfg.DB, cfg.Prepared, cfg.River, cfg.Logger = a.DB, prep, a.River, a.log
	central, err := senders.NewCentral()
	if err != nil {
		return fmt.Errorf("job outbox: %w", err)
	}
	appliers := map[string]joboutbox.Applier{senders.KindCentral: central.Apply, consent.KindAudit: consent.ApplyAudit}
	maps.Copy(appliers, cfg.Appliers)
	cfg.Appliers = appliers
	a.Outbox, err = joboutbox.New(cfg)
	return err
}
