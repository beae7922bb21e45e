// Package consent keeps an organization from messaging people who asked it
// to stop (docs/api.md, §Opt-outs): the opt-out list and its keywords, the
// confirmation replies, and the organization's reply texts.
//
// Where each rule sits:
//   - "no send to an opted-out recipient" is the acceptance statement's
//     (platform/acceptance), which reads the list after its transaction
//     took the phone's opt-out lock in share mode (ShareLocker); this
//     package takes the lock exclusively (queries/lock.sql) before every
//     change of a phone's opt-out, so a send is never accepted after an
//     opt-out committed (docs/design.md, §Consent);
//   - keywords (Keyword) are read on every inbound message, in the
//     transaction that stores it (ApplyKeyword);
//   - the confirmation goes out by a job (queue.ConsentReplyArgs, SendReply)
//     inserted in that transaction, under a network reference of its own, so
//     it is sent once, from the number the keyword came to, and counts
//     against no limit.
//
// Its statements are named queries (queries/*.sql, platform/sqlq): those
// that run in a pgx transaction (the locks, the list's changes and the
// texts read with an inbound message, in messages' transaction) through
// Pgx, the others through bun.
package consent

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bizmsg/platform/platform/clock"
	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/defaults"
	"github.com/bizmsg/platform/platform/network"
	"github.com/bizmsg/platform/platform/queue"
	"github.com/bizmsg/platform/platform/sqlq"
	"github.com/bizmsg/platform/platform/webhooks"
)

// queries are the package's named queries (platform/sqlq), with the
// fragment opt_out_entry, an entry's columns.
//
//go:embed queries/*.sql queries/fragments/*.sql
var queries embed.FS

// loadQueries reads the package's named queries.
func loadQueries() (*sqlq.Queries, error) {
	q, err := sqlq.Load(queries, "queries")
	if err != nil {
		return nil, fmt.Errorf("consent: %w", err)
	}
	return q, nil
}

// Sources of an opt-out entry.
const (
	// SourceKeyword: the recipient wrote an opt-out keyword.
	SourceKeyword = "keyword"
	// SourceAPI: POST /api/v1/opt-outs.
	SourceAPI = "api"
	// SourceDashboard: the dashboard's opt-out page.
	SourceDashboard = "dashboard"
)

// Error codes of the consent rules.
const (
	// CodeRecipientOptedOut (422): a send to a phone on the opt-out list.
	CodeRecipientOptedOut = "recipient_opted_out"
	// ReasonOptedOut is the lookup's reason_code for such a phone.
	ReasonOptedOut = "opted_out"
)

// Default confirmation texts, sent while the organization has set none.
const (
	DefaultOptOutReply = "You have been unsubscribed and will receive no more messages from us. Reply START to subscribe again."
	DefaultOptInReply  = "You have been subscribed again. Reply STOP to unsubscribe."
)

// MaxReplyLength bounds a reply text, in characters; MaxNoteLength an
// entry's note.
const (
	MaxReplyLength = 320
	MaxNoteLength  = 500
)

// The keywords (docs/api.md, §Opt-outs): an inbound text that is exactly one
// of them, trimmed, in any case.
var (
	optOutWords = []string{"STOP", "STOPALL", "UNSUBSCRIBE", "CANCEL", "END", "QUIT", "OPTOUT", "REVOKE"}
	optInWords  = []string{"START", "UNSTOP", "YES"}
)

// Keyword reads an inbound message's text: the keyword it is (upper case)
// and whether it opts out (true) or in (false); ok is false for any other
// text.
func Keyword(text string) (word string, optOut, ok bool) {
	w := strings.ToUpper(strings.TrimSpace(text))
	if len(w) > len("UNSUBSCRIBE") {
		return "", false, false
	}
	for _, k := range optOutWords {
		if w == k {
			return k, true, true
		}
	}
	for _, k := range optInWords {
		if w == k {
			return k, false, true
		}
	}
	return "", false, false
}

// Entry is one phone on the opt-out list (or, in a contact.opted_in event,
// the opt-in: how and when the phone came back). Its bun tags name the
// columns of the tenant's opt_outs table (entryRow).
type Entry struct {
	ID    int64  `bun:"id,pk" json:"-"`
	Phone string `bun:"phone" json:"phone"`
	// Source is SourceKeyword, SourceAPI or SourceDashboard.
	Source string `bun:"source" json:"source"`
	// Keyword is the word the recipient wrote (null unless Source is
	// keyword).
	Keyword *string `bun:"keyword" json:"keyword"`
	// SenderNumberID is the number the keyword came to (null unless
	// Source is keyword).
	SenderNumberID *int64 `bun:"sender_number_id" json:"sender_number_id"`
	// Note is the organization's note (null when none).
	Note      *string   `bun:"note" json:"note"`
	CreatedAt time.Time `bun:"created_at" json:"created_at"`
}

// Settings are the organization's confirmation texts: nil is the English
// default, "" sends none.
type Settings struct {
	OptOutReply *string
	OptInReply  *string
	UpdatedAt   *time.Time
}

// settingsJSON is the settings resource: the texts in force.
type settingsJSON struct {
	OptOutReply string  `json:"opt_out_reply"`
	OptInReply  string  `json:"opt_in_reply"`
	UpdatedAt   *string `json:"updated_at"`
}

// Replies are the texts in force: the organization's, else the defaults.
func (s Settings) Replies() (optOut, optIn string) {
	optOut, optIn = DefaultOptOutReply, DefaultOptInReply
	if s.OptOutReply != nil {
		optOut = *s.OptOutReply
	}
	if s.OptInReply != nil {
		optIn = *s.OptInReply
	}
	return optOut, optIn
}

// Config configures the Service.
type Config struct {
	// DB is the pool. Required.
	DB *db.DB
	// Jobs inserts the confirmation jobs. The platform's is the job outbox
	// (joboutbox.Outbox) with ApplyAudit registered for KindAudit: it then
	// also carries the audit entries of the opt-outs made by request, and
	// the service flushes it after each such commit. Any other inserter (a
	// River client, in tests) makes the service write those entries in the
	// tenant's transaction, as a single server can. Required.
	Jobs queue.Inserter
	// Network sends the confirmations. Required.
	Network network.Network
	// Events records contact.opted_out and contact.opted_in (nil: none).
	Events webhooks.Emitter
	// Clock defaults to the real clock.
	Clock clock.Clock
	// Logger defaults to slog.Default().
	Logger *slog.Logger
}

// Service is the opt-out list of every organization.
type Service struct {
	db     *db.DB
	q      *sqlq.Queries
	jobs   queue.Inserter
	net    network.Network
	events webhooks.Emitter
	clock  clock.Clock
	log    *slog.Logger
	// outbox is Jobs when it is a job outbox that applies KindAudit
	// (audit.go); nil otherwise.
	outbox auditOutbox
}

// New returns the consent service.
func New(cfg Config) (*Service, error) {
	if cfg.DB == nil || cfg.Jobs == nil || cfg.Network == nil {
		return nil, errors.New("consent: a database, a job inserter and a network are required")
	}
	defaults.Clock(&cfg.Clock)
	defaults.Logger(&cfg.Logger)
	q, err := loadQueries()
	if err != nil {
		return nil, err
	}
	s := &Service{db: cfg.DB, q: q, jobs: cfg.Jobs, net: cfg.Network, events: cfg.Events, clock: cfg.Clock, log: cfg.Logger}
	if o, ok := cfg.Jobs.(auditOutbox); ok && o.Applies(KindAudit) {
		s.outbox = o
	}
	return s, nil
}

// query runs named query name with args in tx, a pgx transaction, for
// tenant t (db.QueryNamed).
func (s *Service) query(ctx context.Context, tx pgx.Tx, t db.Tenant, name string, args sqlq.Args) (pgx.Rows, error) {
	return db.QueryNamed(ctx, tx, s.q, name, t.Quoted(), args)
}

// exec is query for a statement whose rows are not read.
func (s *Service) exec(ctx context.Context, tx pgx.Tx, t db.Tenant, name string, args sqlq.Args) error {
	_, err := db.ExecNamed(ctx, tx, s.q, name, t.Quoted(), args)
	return err
}
