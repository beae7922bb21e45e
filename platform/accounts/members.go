package accounts

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bizmsg/platform/platform/apperr"
	"github.com/bizmsg/platform/platform/audit"
	"github.com/bizmsg/platform/platform/clock"
	"github.com/bizmsg/platform/platform/page"
	"github.com/bizmsg/platform/platform/password"
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
	rows, err := s.pool.Query(ctx, `
		SELECT u.id, u.name, u.email, m.role, u.created_at
		FROM central.memberships m JOIN central.users u ON u.id = m.user_id
		WHERE m.organization_id = $1 AND ($2::bigint = 0 OR u.id < $2)
		ORDER BY u.id DESC
		LIMIT $3`, orgID, pg.After, pg.Limit+1)
	if err != nil {
		return nil, "", fmt.Errorf("list members: %w", err)
	}
	defer rows.Close()
	var out []User
	for rows.Next() {
		var u User
		if err := rows.Scan(&u.ID, &u.Name, &u.Email, &u.Role, &u.CreatedAt); err != nil {
			return nil, "", fmt.Errorf("scan member: %w", err)
		}
		u.CreatedAt = clock.Stamp(u.CreatedAt)
		out = append(out, u)
	}
	if err := rows.Err(); err != nil {
		return nil, "", fmt.Errorf("list members: %w", err)
	}
	out, next := page.Cut(pg, out, func(u User) int64 { return u.ID })
	return out, next, nil
}

// Owners returns how many owners the organization has. RemoveMember
// refuses to remove the last one (422 last_owner); the dashboard uses the
// count to offer "Remove" only where it can succeed.
func (s *Service) Owners(ctx context.Context, orgID int64) (int, error) {
	var n int
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM central.memberships WHERE organization_id = $1 AND role = 'owner'`,
		orgID).Scan(&n); err != nil {
		return 0, fmt.Errorf("count owners: %w", err)
	}
	return n, nil
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
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if err := insertMember(ctx, tx, p.OrgID, &u, hash); err != nil {
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
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT 1 FROM central.organizations WHERE id = $1 FOR UPDATE`, p.OrgID); err != nil {
			return fmt.Errorf("lock organization: %w", err)
		}
		// The caller's role as of now, under the lock: a concurrent change
		// may have removed or demoted them since authentication.
		err := tx.QueryRow(ctx, `SELECT role FROM central.memberships WHERE organization_id = $1 AND user_id = $2`,
			p.OrgID, p.UserID).Scan(&p.Role)
		if errors.Is(err, pgx.ErrNoRows) {
			return ErrInvalidToken()
		}
		if err != nil {
			return fmt.Errorf("load caller: %w", err)
		}
		if !p.IsAdmin() {
			return errNotAdmin("Only owners and admins can remove members.")
		}
		var u User
		err = tx.QueryRow(ctx, `
			SELECT u.id, u.name, u.email, m.role, u.created_at
			FROM central.memberships m JOIN central.users u ON u.id = m.user_id
			WHERE m.organization_id = $1 AND m.user_id = $2`, p.OrgID, userID,
		).Scan(&u.ID, &u.Name, &u.Email, &u.Role, &u.CreatedAt)
		if errors.Is(err, pgx.ErrNoRows) {
			return apperr.NotFound("member")
		}
		if err != nil {
			return fmt.Errorf("load member: %w", err)
		}
		if u.Role == RoleOwner {
			if p.Role != RoleOwner {
				return errNotAdmin("Only owners can remove owners.")
			}
			var owners int
			if err := tx.QueryRow(ctx, `SELECT count(*) FROM central.memberships WHERE organization_id = $1 AND role = 'owner'`,
				p.OrgID).Scan(&owners); err != nil {
				return fmt.Errorf("count owners: %w", err)
			}
			if owners <= 1 {
				return apperr.Invalid("last_owner", "The last owner of an organization cannot be removed.")
			}
		}
		// Audited first, while the remover's account (whose name the entry
		// keeps) surely exists: a member may remove themselves.
		if err := auditMember(ctx, tx, p, audit.ActionMemberRemove, u, now); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM central.memberships WHERE organization_id = $1 AND user_id = $2`, p.OrgID, userID); err != nil {
			return fmt.Errorf("delete membership: %w", err)
		}
		if _, err := tx.Exec(ctx, `DELETE FROM central.refresh_tokens WHERE organization_id = $1 AND user_id = $2`, p.OrgID, userID); err != nil {
			return fmt.Errorf("delete sessions: %w", err)
		}
		// The account goes with its last membership.
		if _, err := tx.Exec(ctx, `DELETE FROM central.users u WHERE u.id = $1
			AND NOT EXISTS (SELECT 1 FROM central.memberships m WHERE m.user_id = u.id)`, userID); err != nil {
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
func auditMember(ctx context.Context, tx pgx.Tx, p Principal, action string, u User, now time.Time) error {
	return audit.Record(ctx, tx, audit.Entry{
		OrgID:   p.OrgID,
		Actor:   audit.User(p.UserID),
		Action:  action,
		Target:  audit.Target{Type: audit.TargetUser, ID: u.ID},
		Details: map[string]any{"email": u.Email, "name": u.Name, "role": u.Role},
		At:      now,
	})
}
