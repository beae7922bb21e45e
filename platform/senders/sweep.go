package senders

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/bizmsg/platform/platform/audit"
	"github.com/bizmsg/platform/platform/db"
)

// sweepPage is how many pending numbers the sweep reads per query.
const sweepPage = 500

// ActivateVerifiedOwners is the account-verification sweep
// (jobs.AccountSweeper): every pending_account_verification number of every
// organization whose owner's network account is now verified becomes active.
// It reads the pending numbers from the central directory (not every tenant
// schema) and asks the network once per distinct phone. A number whose phone
// is active in another organization stays pending (and is retried by later
// sweeps). Failures to check some numbers are returned joined, after the
// others have been processed. It first releases the phone claims that no
// tenant row holds (releaseStaleClaims): those of a process that died
// between a claim and its activation's commit.
func (s *Service) ActivateVerifiedOwners(ctx context.Context) (int, error) {
	var (
		a                activations
		afterOrg, afterS int64
		verified         = map[string]bool{}
	)
	if released, err := s.releaseStaleClaims(ctx); err != nil {
		a.errs = append(a.errs, err)
	} else if released > 0 {
		s.log.InfoContext(ctx, "released sender claims no number holds", "released", released)
	}
	for {
		page, err := s.dirPending(ctx, afterOrg, afterS, sweepPage)
		if err != nil {
			return a.n, err
		}
		for _, loc := range page {
			afterOrg, afterS = loc.OrgID, loc.SenderID
			ok, seen := verified[loc.Phone]
			if !seen {
				if ok, err = s.ownerVerified(ctx, loc.Phone); err != nil {
					a.errs = append(a.errs, fmt.Errorf("sender %d of organization %d: %w", loc.SenderID, loc.OrgID, err))
					continue
				}
				verified[loc.Phone] = ok
			}
			if ok {
				a.add(s.activateAt(ctx, loc, viaSweep))
			}
		}
		if len(page) < sweepPage {
			return a.result()
		}
	}
}

// activations tallies a run of activations (activateAt): the numbers made
// active, and the failures, kept so that one does not stop the others.
type activations struct {
	n    int
	errs []error
}

// add counts the outcome of one activation and reports whether the number
// became active.
func (a *activations) add(done bool, err error) bool {
	if err != nil {
		a.errs = append(a.errs, err)
		return false
	}
	if done {
		a.n++
	}
	return done
}

// result is how many numbers became active, and the failures joined.
func (a *activations) result() (int, error) { return a.n, errors.Join(a.errs...) }

// How the network's verification of an owner reached the platform, in the
// details of a sender.activate audit entry.
const (
	viaEvent = "account.verified event"
	viaSweep = "sweep"
)

// activateAt is activatePending for the number of a directory location.
func (s *Service) activateAt(ctx context.Context, loc location, via string) (bool, error) {
	t, err := loc.tenant()
	if err != nil {
		return false, err
	}
	done, err := s.activatePending(ctx, t, loc.SenderID, loc.Phone, via)
	if err != nil {
		return false, fmt.Errorf("activate sender %d of organization %d: %w", loc.SenderID, loc.OrgID, err)
	}
	return done, nil
}

// activatePending makes a pending_account_verification number active, unless
// its state changed meanwhile or its phone is active elsewhere, and records
// the activation in the audit log (actor network; via says whether the
// network's event or the sweep brought the news). The phone's claim is
// taken first, in a transaction of its own, and released unless the
// number became active; the tenant's transaction writes the number, its
// event and its coordinator writes (toCentral), which are moved after the
// commit.
func (s *Service) activatePending(ctx context.Context, t db.Tenant, id int64, phone, via string) (bool, error) {
	claimed, err := s.claimFirst(ctx, t, id, phone)
	if err != nil {
		return false, err
	}
	if !claimed {
		s.log.Debug("sender stays pending: phone active in another organization", "schema", t.Schema, "sender_id", id)
		return false, nil
	}
	var done bool
	err = s.inRowTx(ctx, t, id, func(tx pgx.Tx, r *row) error {
		if r.Status != StatusPendingAccountVerification || r.Phone != phone {
			return nil
		}
		if held, err := s.q.claimHeld(ctx, tx, t.OrgID, r); err != nil || !held {
			return err
		}
		now := s.clock.Now()
		r.Status = StatusActive
		r.ActivatedAt = &now
		if err := s.q.saveRow(ctx, tx, t, r, now); err != nil {
			return err
		}
		if err := s.statusChanged(ctx, tx, t, r); err != nil {
			return err
		}
		if err := s.toCentral(ctx, tx, t, r, &audit.Entry{
			Actor:  audit.Network(),
			Action: audit.ActionSenderActivate,
			Details: map[string]any{
				"phone": r.Phone, "previous_status": StatusPendingAccountVerification, "status": r.Status, "via": via,
			},
			At: now,
		}); err != nil {
			return err
		}
		done = true
		return nil
	})
	if err != nil || !done {
		s.compensate(ctx, t, id, phone)
	}
	if err != nil {
		return false, err
	}
	if done {
		s.flush(ctx, t)
	}
	return done, nil
}
