package accounts

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	"github.com/bizmsg/platform/platform/apperr"
	"github.com/bizmsg/platform/platform/audit"
	"github.com/bizmsg/platform/platform/clock"
	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/page"
	"github.com/bizmsg/platform/platform/password"
	"github.com/bizmsg/platform/platform/sqlq"
)

// NewMember is the body of POST /users: the new member's account, with an
// initial password chosen by the owner or admin who adds them.
type NewMember struct {
	Name     string `json:"name"`
	Email    string `json:"email"`
	Role     string `json:"role"`
	Password string `json:"password"`
}

// validRole reports whether role is one of the organization roles.
func validRole(role string) bool {
	return role == RoleOwner || role == RoleAdmin || role == RoleMember
}

// errNotAdmin is the 403 for a member who may not change the organization.
func errNotAdmin(msg string) error {
	return apperr.Forbidden("insufficient_role", msg)
}

// Members returns one page of the organization's members, newest first, and
// the next page's cursor ("" on the last page).
func (s *Service) Members(ctx context.Context, orgID int64, pg page.Query) ([]User, string, error) {
	var out []User
	if err := s.q.Raw(s.db.Bun, "members", sqlq.Args{"org_id": orgID, "after": pg.After, "limit": pg.Limit + 1}).
		Scan(ctx, &out); err != nil {
		return nil, "", fmt.Errorf("list members: %w", err)
	}
	for i := range out {
		out[i].CreatedAt = clock.Stamp(out[i].CreatedAt)
	}
	out, next := page.Cut(pg, out, func(u User) int64 { return u.ID })
	return out, next, nil
}

// Owners returns how many owners the organization has. RemoveMember
// refuses to remove the last one (422 last_owner); the dashboard uses the
// count to offer "Remove" only where it can succeed.
func (s *Service) Owners(ctx context.Context, orgID int64) (int, error) {
	return owners(ctx, s.db.Bun, orgID)
}

func owners(ctx context.Context, idb bun.IDB, orgID int64) (int, error) {
	n, err := idb.NewSelect().Model((*membershipRow)(nil)).
		Where("organization_id = ?", orgID).Where("role = ?", RoleOwner).Count(ctx)
	if err != nil {
		return 0, fmt.Errorf("count owners: %w", err)
	}
	return int(n), nil
}

// AddMember creates a user account in the caller's organization with the
// given role and initial password. Owners and admins may add members and
// admins; only owners may add owners. An email that already has an account
// is 409 email_taken (a user belongs to one organization).
func (s *Service) AddMember(ctx context.Context, p Principal, m NewMember) (*User, error) {
	if !p.IsAdmin() {
		return nil, errNotAdmin("Only owners and admins can add members.")
	}
	var v apperr.Validation
	m.Name = checkName(&v, "name", m.Name)
	m.Email = checkEmail(&v, m.Email)
	if !validRole(m.Role) {
		v.Add("role", "must be one of owner, admin, member")
	}
	checkPassword(&v, "password", m.Password)
	if err := v.Err(); err != nil {
		return nil, err
	}
	if m.Role == RoleOwner && p.Role != RoleOwner {
		return nil, errNotAdmin("Only owners can add owners.")
	}
	hash, err := password.Hash(m.Password)
	if err != nil {
		return nil, fmt.Errorf("add member: %w", err)
	}
	now := clock.Stamp(s.cfg.Clock.Now())
	u := User{Name: m.Name, Email: m.Email, Role: m.Role, CreatedAt: now}
	err = s.db.RunInTx(ctx, func(tx db.Tx) error {
		if err := insertMember(ctx, tx.Bun, p.OrgID, &u, hash); err != nil {
			return err
		}
		return auditMember(ctx, tx, p, audit.ActionMemberAdd, u, now)
	})
	if _, ok := apperr.As(err); ok {
		return nil, err
	}
	if err != nil {
		return nil, fmt.Errorf("add member: %w", err)
	}
	return &u, nil
}

// RemoveMember removes user userID from the caller's organization: their
// account and sessions are deleted. Owners and admins may remove members and
// admins (themselves included); only owners may remove owners; the last
// owner cannot be removed (422 last_owner). Membership changes of one
// organization are serialised on its row, so two owners removing each other
// at once cannot leave it without an owner. Another organization's user is
// 404.
func (s *Service) RemoveMember(ctx context.Context, p Principal, userID int64) error {
	if !p.IsAdmin() {
		return errNotAdmin("Only owners and admins can remove members.")
	}
	now := clock.Stamp(s.cfg.Clock.Now())
	err := s.db.RunInTx(ctx, func(tx db.Tx) error {
		if _, err := tx.Bun.NewSelect().Model((*orgRow)(nil)).Column("id").Where("id = ?", p.OrgID).For("UPDATE").
			Exec(ctx); err != nil {
			return fmt.Errorf("lock organization: %w", err)
		}
		// The caller's role as of now, under the lock: a concurrent change
		// may have removed or demoted them since authentication.
		var err error
		p.Role, err = memberRole(ctx, tx.Bun, p.OrgID, p.UserID)
		if errors.Is(err, sql.ErrNoRows) {
			return ErrInvalidToken()
		}
		if err != nil {
			return fmt.Errorf("load caller: %w", err)
		}
		if !p.IsAdmin() {
			return errNotAdmin("Only owners and admins can remove members.")
		}
		var u User
		err = s.q.Raw(tx.Bun, "member", sqlq.Args{"org_id": p.OrgID, "user_id": userID}).Scan(ctx, &u)
		if errors.Is(err, sql.ErrNoRows) {
			return apperr.NotFound("member")
		}
		if err != nil {
			return fmt.Errorf("load member: %w", err)
		}
		if u.Role == RoleOwner {
			if p.Role != RoleOwner {
				return errNotAdmin("Only owners can remove owners.")
			}
			n, err := owners(ctx, tx.Bun, p.OrgID)
			if err != nil {
				return err
			}
			if n <= 1 {
				return apperr.Invalid("last_owner", "The last owner of an organization cannot be removed.")
			}
		}
		// Audited first, while the remover's account (whose name the entry
		// keeps) surely exists: a member may remove themselves.
		if err := auditMember(ctx, tx, p, audit.ActionMemberRemove, u, now); err != nil {
			return err
		}
		if _, err := tx.Bun.NewDelete().Model(&membershipRow{OrganizationID: p.OrgID, UserID: userID}).WherePK().Exec(ctx); err != nil {
			return fmt.Errorf("delete membership: %w", err)
		}
		if _, err := tx.Bun.NewDelete().Model((*refreshRow)(nil)).
			Where("organization_id = ?", p.OrgID).Where("user_id = ?", userID).Exec(ctx); err != nil {
			return fmt.Errorf("delete sessions: %w", err)
		}
		// The account goes with its last membership.
		if _, err := s.q.Raw(tx.Bun, "delete_orphan_user", sqlq.Args{"user_id": userID}).Exec(ctx); err != nil {
			return fmt.Errorf("delete user: %w", err)
		}
		return nil
	})
	if _, ok := apperr.As(err); ok {
		return err
	}
	if err != nil {
		return fmt.Errorf("remove member %d: %w", userID, err)
	}
	return nil
}

// auditMember writes a membership change to the audit log (platform/audit),
// in the change's transaction; the target is the member's account.
func auditMember(ctx context.Context, tx db.Tx, p Principal, action string, u User, now time.Time) error {
	return audit.Record(ctx, tx.Pgx(), audit.Entry{
		OrgID:   p.OrgID,
		Actor:   audit.User(p.UserID),
		Action:  action,
		Target:  audit.Target{Type: audit.TargetUser, ID: u.ID},
		Details: map[string]any{"email": u.Email, "name": u.Name, "role": u.Role},
		At:      now,
	})
}
