package accounts

import (
	"embed"
	"time"

	"github.com/uptrace/bun"
)

// queries are the package's named queries (platform/sqlq): the statements
// bun's builder does not say well.
//
//go:embed queries/*.sql
var queries embed.FS

// The bun models of the central tables the Service owns. A model names
// the columns the Service reads and writes; the others keep their
// defaults.

type orgRow struct {
	bun.BaseModel `bun:"table:central.organizations,alias:o"`

	ID                 int64     `bun:"id,pk,autoincrement"`
	Name               string    `bun:"name"`
	SchemaName         *string   `bun:"schema_name"`
	SubscriptionStatus string    `bun:"subscription_status"`
	DefaultDailyLimit  int       `bun:"default_daily_limit"`
	CreatedAt          time.Time `bun:"created_at"`
}

type userRow struct {
	bun.BaseModel `bun:"table:central.users,alias:u"`

	ID           int64     `bun:"id,pk,autoincrement"`
	Email        string    `bun:"email"`
	Name         string    `bun:"name"`
	PasswordHash string    `bun:"password_hash"`
	CreatedAt    time.Time `bun:"created_at"`
}

type membershipRow struct {
	bun.BaseModel `bun:"table:central.memberships,alias:m"`

	OrganizationID int64     `bun:"organization_id,pk"`
	UserID         int64     `bun:"user_id,pk"`
	Role           string    `bun:"role"`
	CreatedAt      time.Time `bun:"created_at"`
}

type refreshRow struct {
	bun.BaseModel `bun:"table:central.refresh_tokens,alias:r"`

	ID             int64      `bun:"id,pk,autoincrement"`
	UserID         int64      `bun:"user_id"`
	OrganizationID int64      `bun:"organization_id"`
	FamilyID       string     `bun:"family_id"`
	TokenHash      []byte     `bun:"token_hash"`
	ExpiresAt      time.Time  `bun:"expires_at"`
	UsedAt         *time.Time `bun:"used_at"`
	RevokedAt      *time.Time `bun:"revoked_at"`
	CreatedAt      time.Time  `bun:"created_at"`
}

type throttleRow struct {
	bun.BaseModel `bun:"table:central.login_throttle,alias:t"`

	Key         string    `bun:"key,pk"`
	Attempts    int       `bun:"attempts"`
	WindowStart time.Time `bun:"window_start"`
}
