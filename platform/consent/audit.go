package consent

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bizmsg/platform/platform/audit"
	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/queue"
)

// An opt-out's audit entry (docs/scaling.md, §Jobs: Coordinator writes) is
// a coordinator write: central.audit_log is on the coordinator, the
// opt-out list in the tenant's schema, on a worker under Citus. The
// change's transaction writes the entry as one row of the tenant's job
// outbox, of kind KindAudit, which the outbox's move applies on the
// coordinator (ApplyAudit), and the service flushes the outbox after the
// commit, so the entry is in the log when the request answers.

// KindAudit is the job outbox kind of an opt-out's audit entry: the
// platform registers ApplyAudit for it (joboutbox.Config's Appliers).
const KindAudit = "consent_audit"

// auditArgs is an opt-out's audit entry, with the key that makes applying
// it twice write it once.
type auditArgs struct {
	queue.TenantRef
	Key     string         `json:"key"`
	UserID  int64          `json:"user_id,omitempty"`
	KeyID   int64          `json:"key_id,omitempty"`
	Action  string         `json:"action"`
	EntryID int64          `json:"entry_id"`
	Details map[string]any `json:"details"`
	At      time.Time      `json:"at"`
}

// Kind is KindAudit.
func (auditArgs) Kind() string { return KindAudit }

// entry is a's audit entry.
func (a auditArgs) entry() audit.Entry {
	return audit.Entry{
		OrgID: a.OrgID, Actor: audit.Requester(a.UserID, a.KeyID), Action: a.Action,
		Target:  audit.Target{Type: audit.TargetOptOut, ID: a.EntryID},
		Details: a.Details, At: a.At,
	}
}

// ApplyAudit applies a KindAudit row of tenant t's job outbox in tx, a
// transaction on the coordinator (a joboutbox.Applier). Applied twice, it
// writes the entry once (audit.RecordOnce, by the row's key).
func ApplyAudit(ctx context.Context, tx pgx.Tx, t db.Tenant, args []byte) error {
	var a auditArgs
	if err := json.Unmarshal(args, &a); err != nil {
		return fmt.Errorf("opt-out audit entry: %w", err)
	}
	if a.OrgID != t.OrgID {
		return fmt.Errorf("opt-out audit entry of organization %d in the outbox of %s", a.OrgID, t.Schema)
	}
	return audit.RecordOnce(ctx, tx, a.Key, a.entry())
}

// auditOutbox is the job outbox (joboutbox.Outbox) as the service uses it
// for the audit entries.
type auditOutbox interface {
	Applies(kind string) bool
	Flush(ctx context.Context, t db.Tenant) (int, error)
}

// audit records a change by request to the audit log: a row of t's job
// outbox in tx, or, when the service's jobs do not go through an outbox
// that applies KindAudit (a River client, in tests), the entry itself in
// tx.
func (s *Service) audit(ctx context.Context, tx pgx.Tx, t db.Tenant, by Actor, action string, e Entry) error {
	details := map[string]any{"phone": e.Phone, "source": e.Source, "note": e.Note}
	if by.KeyID > 0 {
		details["via_api_key_id"] = by.KeyID
	}
	a := auditArgs{TenantRef: queue.RefOf(t), UserID: by.UserID, KeyID: by.KeyID, Action: action,
		EntryID: e.ID, Details: details, At: s.clock.Now()}
	if s.outbox == nil {
		return audit.Record(ctx, tx, a.entry())
	}
	key, err := audit.NewKey("opt_out")
	if err != nil {
		return err
	}
	a.Key = key
	if _, err := s.jobs.InsertTx(ctx, tx, a, nil); err != nil {
		return fmt.Errorf("queue the audit entry of %s: %w", action, err)
	}
	return nil
}

// flush moves t's job outbox after a commit that wrote an audit entry
// into it, so that the entry is in the log when the caller answers. A
// failure is logged: the row stays, and the process's mover or the
// periodic sweep applies it.
func (s *Service) flush(ctx context.Context, t db.Tenant) {
	if s.outbox == nil {
		return
	}
	if _, err := s.outbox.Flush(ctx, t); err != nil {
		s.log.WarnContext(ctx, "move opt-out audit entries", "schema", t.Schema, "error", err)
	}
}
