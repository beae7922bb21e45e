package senders

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bizmsg/platform/platform/apperr"
	"github.com/bizmsg/platform/platform/audit"
	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/queue"
)

// A number's coordinator writes (docs/scaling.md, §What crosses nodes
// today): its mirror in central.sender_number_directory and the audit
// entries of its operator and network changes are not written in the
// tenant's transaction. The transaction writes one row of the tenant's job
// outbox of kind KindCentral, which the outbox's move applies on the
// coordinator (Central.Apply), and the service flushes the outbox after its
// commit so that the directory is current when it answers. The claim on a
// phone (central.active_sender_phones) is a decision across organizations
// and stays synchronous: it is taken in a coordinator transaction of its
// own before the tenant's, and released (releaseUnheld) when the tenant's
// transaction does not make the number hold it.

// KindCentral is the job outbox kind of a sender number's coordinator
// writes: the platform registers Central.Apply for it (joboutbox.Config's
// Appliers).
const KindCentral = "sender_central"

// centralArgs is one coordinator write of a number: its directory entry
// as of UpdatedAt and, for an operator's or the network's change, the
// audit entry.
type centralArgs struct {
	queue.TenantRef
	SenderID  int64         `json:"sender_id"`
	Phone     string        `json:"phone"`
	Status    Status        `json:"status"`
	UpdatedAt time.Time     `json:"updated_at"`
	Audit     *centralAudit `json:"audit,omitempty"`
}

// Kind is KindCentral.
func (centralArgs) Kind() string { return KindCentral }

// centralAudit is an audit entry of a number's change (its target is the
// number), with the key that makes applying it twice write it once.
type centralAudit struct {
	Key       string         `json:"key"`
	ActorType string         `json:"actor_type"`
	Action    string         `json:"action"`
	Details   map[string]any `json:"details"`
	At        time.Time      `json:"at"`
}

// centralOutbox is the job outbox (joboutbox.Outbox) as the service uses
// it for its coordinator writes.
type centralOutbox interface {
	Applies(kind string) bool
	Flush(ctx context.Context, t db.Tenant) (int, error)
}

// Central applies the KindCentral rows of the job outbox: its Apply is the
// joboutbox.Applier the platform registers for KindCentral.
type Central struct{ q named }

// NewCentral returns the applier of KindCentral rows.
func NewCentral() (*Central, error) {
	q, err := loadNamed()
	if err != nil {
		return nil, err
	}
	return &Central{q: q}, nil
}

// Apply applies a KindCentral row of tenant t's job outbox in tx, a
// transaction on the coordinator (a joboutbox.Applier). Applied twice, it
// changes what it changed once: the directory entry is written only over
// an older one (a number's updated_at increases at every change,
// saveRow), and the audit entry is written once by its key.
func (c *Central) Apply(ctx context.Context, tx pgx.Tx, t db.Tenant, args []byte) error {
	var a centralArgs
	if err := json.Unmarshal(args, &a); err != nil {
		return fmt.Errorf("sender central write: %w", err)
	}
	if a.OrgID != t.OrgID {
		return fmt.Errorf("sender central write of organization %d in the outbox of %s", a.OrgID, t.Schema)
	}
	return c.q.applyCentral(ctx, tx, a)
}

// applyCentral writes a's directory entry and audit entry in q.
func (n named) applyCentral(ctx context.Context, q querier, a centralArgs) error {
	if err := n.dirUpsert(ctx, q, a); err != nil {
		return err
	}
	if a.Audit == nil {
		return nil
	}
	return audit.RecordOnce(ctx, q, a.Audit.Key, audit.Entry{
		OrgID:   a.OrgID,
		Actor:   audit.Actor{Type: a.Audit.ActorType},
		Action:  a.Audit.Action,
		Target:  audit.Target{Type: audit.TargetSenderNumber, ID: a.SenderID},
		Details: a.Audit.Details,
		At:      a.Audit.At,
	})
}

// toCentral records r's coordinator writes, as of r's state in tx, and e
// (its actor without an id: the operator or the network) when not nil: a
// row of the job outbox, or, when the service's jobs do not go through an
// outbox that applies KindCentral (a River client, in tests), the writes
// themselves in tx.
func (s *Service) toCentral(ctx context.Context, tx pgx.Tx, t db.Tenant, r *row, e *audit.Entry) error {
	a := centralArgs{TenantRef: queue.RefOf(t), SenderID: r.ID, Phone: r.Phone, Status: r.Status, UpdatedAt: r.UpdatedAt}
	if e != nil {
		key, err := audit.NewKey("sender")
		if err != nil {
			return err
		}
		a.Audit = &centralAudit{Key: key, ActorType: e.Actor.Type,
			Action: e.Action, Details: e.Details, At: e.At}
	}
	if s.outbox == nil {
		return s.q.applyCentral(ctx, tx, a)
	}
	if _, err := s.jobs.InsertTx(ctx, tx, a, nil); err != nil {
		return fmt.Errorf("queue central write of sender %d: %w", r.ID, err)
	}
	return nil
}

// flush moves t's job outbox after a commit that wrote it, so that the
// number's coordinator writes are applied when the caller answers. A
// failure is logged: the rows stay, and the process's mover or the
// periodic sweep moves them.
func (s *Service) flush(ctx context.Context, t db.Tenant) {
	if s.outbox == nil {
		return
	}
	if _, err := s.outbox.Flush(ctx, t); err != nil {
		s.log.WarnContext(ctx, "move sender central writes", "schema", t.Schema, "error", err)
	}
}

// holdsClaim reports whether r, as its tenant row stands, holds its
// phone's claim: active, or suspended or waiting for its owner's
// verification after having been active (a suspension keeps the claim).
func holdsClaim(r *row) bool {
	switch r.Status {
	case StatusActive:
		return true
	case StatusSuspended, StatusPendingAccountVerification:
		return r.ActivatedAt != nil
	}
	return false
}

// claimFirst claims phone for number id of t, in a transaction of its own,
// before the tenant's transaction that activates the number; it reports
// false when another organization's number holds it. The caller releases
// the claim (releaseUnheld) when that transaction does not activate.
func (s *Service) claimFirst(ctx context.Context, t db.Tenant, id int64, phone string) (bool, error) {
	return s.claimPhone(ctx, t.OrgID, &row{ID: id, Phone: phone}, s.clock.Now())
}

// releaseUnheld releases number id's claim on phone unless its tenant row
// holds it (holdsClaim): the compensation of a claim whose activation did
// not happen, and of a claim a rejection left. It decides under the
// tenant row's lock, which an activation holds while it checks that its
// claim is still there (claimHeld), so no activation keeps a released
// claim.
// It reports whether it released one.
func (s *Service) releaseUnheld(ctx context.Context, t db.Tenant, id int64, phone string) (bool, error) {
	var released bool
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		r, err := s.q.lockRow(ctx, tx, t, id)
		if e, ok := apperr.As(err); ok && e.Kind == apperr.KindNotFound {
			r, err = nil, nil
		}
		if err != nil || r != nil && holdsClaim(r) {
			return err
		}
		released, err = s.releasePhone(ctx, t.OrgID, &row{ID: id, Phone: phone})
		return err
	})
	if err != nil {
		return false, fmt.Errorf("release claim of sender %d of %s: %w", id, t.Schema, err)
	}
	return released, nil
}

// compensate is releaseUnheld after an activation that claimed and may
// not have happened, logging a failure (the periodic sweep releases the
// claim: releaseStaleClaims).
func (s *Service) compensate(ctx context.Context, t db.Tenant, id int64, phone string) {
	if _, err := s.releaseUnheld(ctx, t, id, phone); err != nil {
		s.log.WarnContext(ctx, "release sender claim", "schema", t.Schema, "sender_id", id, "error", err)
	}
}

// claimGrace is how old a claim must be before the sweep releases it for
// a tenant row that does not hold it: older than any activation between
// its claim and its commit.
const claimGrace = time.Minute

// releaseStaleClaims releases the claims of numbers whose tenant row does
// not hold them (a process that died between a claim and its activation's
// commit, or after a rejection's commit), among the claims older than
// claimGrace whose directory entry is neither active nor suspended. It
// returns how many it released.
func (s *Service) releaseStaleClaims(ctx context.Context) (int, error) {
	locs, err := s.staleClaims(ctx, s.clock.Now().Add(-claimGrace))
	if err != nil {
		return 0, err
	}
	var (
		released int
		errs     []error
	)
	for _, loc := range locs {
		t, err := loc.tenant()
		done := false
		if err == nil {
			done, err = s.releaseUnheld(ctx, t, loc.SenderID, loc.Phone)
		}
		if err != nil {
			errs = append(errs, err)
		} else if done {
			released++
		}
	}
	return released, errors.Join(errs...)
}
