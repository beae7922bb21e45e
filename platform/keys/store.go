package keys

import (
	"embed"
	"time"

	"github.com/uptrace/bun"
)

// queries are the package's named queries (platform/sqlq), and the
// fragment authenticate its two authentication statements include.
//
//go:embed queries/*.sql queries/fragments/*.sql
var queries embed.FS

// keyRow is the bun model of central.api_keys. Reads leave out the hash
// and the sealed copy (Sealed says whether there is one, sealedColumn);
// Reveal reads the sealed copy, Create writes both.
type keyRow struct {
	bun.BaseModel `bun:"table:central.api_keys,alias:k"`

	ID              int64      `bun:"id,pk,autoincrement"`
	OrganizationID  int64      `bun:"organization_id"`
	CreatedByUserID int64      `bun:"created_by_user_id,nullzero"`
	Name            string     `bun:"name"`
	Prefix          string     `bun:"prefix"`
	KeyHash         []byte     `bun:"key_hash"`
	KeySealed       []byte     `bun:"key_sealed"`
	Scopes          []string   `bun:"scopes,array"`
	ExpiresAt       time.Time  `bun:"expires_at"`
	RevokedAt       *time.Time `bun:"revoked_at"`
	LastUsedAt      *time.Time `bun:"last_used_at"`
	CreatedAt       time.Time  `bun:"created_at"`
	Sealed          bool       `bun:"sealed,scanonly"`
}

// readColumns are the columns of a key's reads, with sealedColumn.
var readColumns = []string{"id", "organization_id", "created_by_user_id", "name", "prefix", "scopes",
	"expires_at", "revoked_at", "last_used_at", "created_at"}

// sealedColumn is whether a key has a sealed copy, read as keyRow.Sealed.
const sealedColumn = "k.key_sealed IS NOT NULL AS sealed"

// selectKeys is a read of keys into dest (a *keyRow or *[]keyRow) on idb.
func selectKeys(idb bun.IDB, dest any) *bun.SelectQuery {
	return idb.NewSelect().Model(dest).Column(readColumns...).ColumnExpr(sealedColumn)
}

// key is the row as a Key.
func (r keyRow) key() Key {
	return Key{
		ID: r.ID, OrgID: r.OrganizationID, CreatedBy: r.CreatedByUserID, Name: r.Name, Prefix: r.Prefix,
		Scopes: r.Scopes, ExpiresAt: r.ExpiresAt, RevokedAt: r.RevokedAt, LastUsedAt: r.LastUsedAt,
		CreatedAt: r.CreatedAt, Sealed: r.Sealed || r.KeySealed != nil,
	}
}

// noticeRow is the bun model of a tenant's notices table.
type noticeRow struct {
	bun.BaseModel `bun:"table:notices,alias:n"`

	Kind      string    `bun:"kind,pk"`
	Ref       int64     `bun:"ref,pk"`
	CreatedAt time.Time `bun:"created_at"`
}
