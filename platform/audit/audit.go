// Package audit is the organization's audit log: who did what to its API
// keys, members and sender numbers, written by the services that make the
// changes (in the transaction of the change) and read by owners and admins
// through the Central API (GET /api/v1/central/audit-log) and the
// dashboard's /audit page (docs/api.md, §Audit log).
//
// An entry names its actor (a member, an API key whose member has left, the
// operator commands, the messaging network, or the platform itself), its
// action (api_key.create, member.remove, sender.activate, ...), its target
// (api_key:12, user:5, sender_number:7), details that depend on the action,
// and its time. Entries are never changed or deleted; they go with their
// organization.
package audit

import (
	"context"
	"crypto/rand"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/bizmsg/platform/platform/httpx"
	"github.com/bizmsg/platform/platform/sqlq"
)

// queryFiles are the package's named queries (platform/sqlq): Record's
// statement, which runs in the change's pgx transaction.
//
//go:embed queries/*.sql
var queryFiles embed.FS

// Actor types: who made a change.
const (
	// ActorUser is a member of the organization, through the dashboard, the
	// Central API, or an API key acting for them (details.via_api_key_id).
	ActorUser = "user"
	// ActorAPIKey is a Tenant API key whose member has left the
	// organization, so it acts for nobody.
	ActorAPIKey = "api_key"
	// ActorOperator is the platform's operator commands (platform admin).
	ActorOperator = "operator"
	// ActorNetwork is the messaging network: a sender number activated
	// because its owner's network account was verified (by the network's
	// account.verified event or by the periodic sweep that asks the network).
	ActorNetwork = "network"
	// ActorSystem is the platform acting on its own, for nobody else (e.g.
	// the benchmark's fixtures).
	ActorSystem = "system"
)

// ActorTypes are the actor types, in the order the docs list them.
var ActorTypes = []string{ActorUser, ActorAPIKey, ActorOperator, ActorNetwork, ActorSystem}

// Target types: what a change was made to.
const (
	TargetAPIKey       = "api_key"
	TargetUser         = "user"
	TargetSenderNumber = "sender_number"
	TargetOptOut       = "opt_out"
)

// TargetTypes are the target types.
var TargetTypes = []string{TargetAPIKey, TargetUser, TargetSenderNumber, TargetOptOut}

// Actions, each named "<family>.<verb>".
const (
	ActionAPIKeyCreate    = "api_key.create"
	ActionAPIKeyRevoke    = "api_key.revoke" //nolint:gosec // G101: an action's name, not a credential
	ActionAPIKeyReveal    = "api_key.reveal" //nolint:gosec // G101: an action's name, not a credential
	ActionMemberAdd       = "member.add"
	ActionMemberRemove    = "member.remove"
	ActionSenderActivate  = "sender.activate"
	ActionSenderSuspend   = "sender.suspend"
	ActionSenderUnsuspend = "sender.unsuspend"
	ActionSenderReject    = "sender.reject"
	ActionSenderSetLimit  = "sender.set_limit"
	ActionOptOutAdd       = "opt_out.add"
	ActionOptOutRemove    = "opt_out.remove"
)

// Actions are every action the log records.
var Actions = []string{
	ActionAPIKeyCreate, ActionAPIKeyRevoke, ActionAPIKeyReveal,
	ActionMemberAdd, ActionMemberRemove,
	ActionSenderActivate, ActionSenderSuspend, ActionSenderUnsuspend, ActionSenderReject, ActionSenderSetLimit,
	ActionOptOutAdd, ActionOptOutRemove,
}

// Families are the actions' families (the part before the dot), each a
// filter for all of its actions.
var Families = []string{"api_key", "member", "sender", "opt_out"}

// Actor is who made a change.
type Actor struct {
	// Type is one of the Actor* constants.
	Type string
	// ID is the user's id (ActorUser) or the key's (ActorAPIKey); 0 for the
	// other types, and for a user the log no longer knows.
	ID int64
	// Name is the user's name when they acted, "" when unknown. Record reads
	// it from the user's account; callers leave it empty.
	Name string
}

// User is the actor a member is.
func User(id int64) Actor { return Actor{Type: ActorUser, ID: id} }

// APIKey is the actor of a Tenant API key that acts for no member.
func APIKey(id int64) Actor { return Actor{Type: ActorAPIKey, ID: id} }

// Operator is the actor of the operator commands.
func Operator() Actor { return Actor{Type: ActorOperator} }

// Network is the actor of the messaging network's changes.
func Network() Actor { return Actor{Type: ActorNetwork} }

// System is the actor of the platform acting on its own.
func System() Actor { return Actor{Type: ActorSystem} }

// Requester is the actor of a change made by request: the member userID
// (acting on the dashboard, or through an API key they created), else the
// API key keyID acting for nobody, else the platform.
func Requester(userID, keyID int64) Actor {
	switch {
	case userID > 0:
		return User(userID)
	case keyID > 0:
		return APIKey(keyID)
	}
	return System()
}

// columns are the actor's actor_user_id and actor_api_key_id columns: its
// ID in the one of its type, 0 (NULL) in the other.
func (a Actor) columns() (userID, keyID int64) {
	switch a.Type {
	case ActorUser:
		return a.ID, 0
	case ActorAPIKey:
		return 0, a.ID
	}
	return 0, 0
}

// Target is what a change was made to.
type Target struct {
	// Type is one of the Target* constants.
	Type string
	ID   int64
}

// String is the stored form, "<type>:<id>" (api_key:12).
func (t Target) String() string { return t.Type + ":" + strconv.FormatInt(t.ID, 10) }

// ParseTarget reads the stored form; ok is false for anything else.
func ParseTarget(s string) (Target, bool) {
	typ, id, ok := parseRef(s, TargetTypes...)
	if !ok {
		return Target{}, false
	}
	return Target{Type: typ, ID: id}, true
}

// Entry is one change.
type Entry struct {
	ID     int64
	OrgID  int64
	Actor  Actor
	Action string
	Target Target
	// Details depend on the action (the key's name and scopes, the member's
	// email and role, the number's phone and statuses, ...).
	Details map[string]any
	// At is when the change was made (the platform clock).
	At time.Time
}

// Execer runs a statement: a pgx transaction (the change's own, so the
// entry commits with it) or a pool.
type Execer interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// Record writes e in q. The actor's name is read from their account in the
// same statement (queries/record.sql); e.ID and e.Actor.Name are ignored.
func Record(ctx context.Context, q Execer, e Entry) error { return RecordOnce(ctx, q, "", e) }

// NewKey draws a RecordOnce key for an entry written from a job outbox:
// prefix (the writer's name) and 16 random bytes in hex, drawn when the
// outbox row is written, so that every application of the row carries it.
func NewKey(prefix string) (string, error) {
	var key [16]byte
	if _, err := rand.Read(key[:]); err != nil {
		return "", fmt.Errorf("audit key: %w", err)
	}
	return prefix + ":" + hex.EncodeToString(key[:]), nil
}

// RecordOnce is Record for an entry that may be written twice (applied
// from a tenant's job outbox, docs/scaling.md §Jobs): the entry with key
// is written once, a second write with the same key is a no-op. An empty
// key is Record.
//
// Its statement is read from the package's embedded file at each call
// (queries/record.sql through sqlq's Pgx), so the package keeps no state
// for its callers' transactions: reading and cutting the file took 34 µs a
// call (measured with the load average at 13 on 2 cores), and an entry is
// a rare write, a key, member, number or opt-out changed by a person.
func RecordOnce(ctx context.Context, q Execer, key string, e Entry) error {
	if err := e.check(); err != nil {
		return err
	}
	details := e.Details
	if details == nil {
		details = map[string]any{}
	}
	raw, err := json.Marshal(details)
	if err != nil {
		return fmt.Errorf("audit %s: details: %w", e.Action, err)
	}
	userID, keyID := e.Actor.columns()
	queries, err := sqlq.Load(queryFiles, "queries")
	if err != nil {
		return fmt.Errorf("audit %s: %w", e.Action, err)
	}
	text, args, err := queries.Pgx("record", "", sqlq.Args{"org_id": e.OrgID, "actor_type": e.Actor.Type,
		"user_id": userID, "key_id": keyID, "action": e.Action, "target": e.Target.String(), "details": raw,
		"at": e.At, "key": key})
	if err != nil {
		return fmt.Errorf("audit %s: %w", e.Action, err)
	}
	if _, err := q.Exec(ctx, text, args...); err != nil {
		return fmt.Errorf("audit %s: %w", e.Action, err)
	}
	return nil
}

// check refuses an entry the log cannot hold: a programming error.
func (e Entry) check() error {
	switch {
	case e.OrgID <= 0:
		return errors.New("audit: entry without an organization")
	case !known(ActorTypes, e.Actor.Type):
		return fmt.Errorf("audit: unknown actor type %q", e.Actor.Type)
	case !known(Actions, e.Action):
		return fmt.Errorf("audit: unknown action %q", e.Action)
	case !known(TargetTypes, e.Target.Type) || e.Target.ID <= 0:
		return fmt.Errorf("audit: bad target %q", e.Target.String())
	case e.At.IsZero():
		return errors.New("audit: entry without a time")
	}
	return nil
}

func known(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// parseRef reads "<type>:<id>", the stored form of a target and the filter
// form of an actor, whose type is one of types; ok is false for anything
// else.
func parseRef(s string, types ...string) (string, int64, bool) {
	typ, raw, ok := strings.Cut(s, ":")
	if !ok || !known(types, typ) {
		return "", 0, false
	}
	id, ok := httpx.ParseID(raw)
	return typ, id, ok
}
