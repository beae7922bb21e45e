package messages

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"

	"github.com/bizmsg/platform/platform/apperr"
	"github.com/bizmsg/platform/platform/consent"
	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/network"
	"github.com/bizmsg/platform/platform/phone"
	"github.com/bizmsg/platform/platform/sqlq"
	"github.com/bizmsg/platform/platform/webhooks"
)

// MaxInboundIDLength bounds the network's id of an inbound message.
const MaxInboundIDLength = 255

// Inbound is a message an account wrote to one of an organization's
// sender numbers, as the network reports it (network.Inbound): ID is the
// network's id of the message (a repeated report stores it once; at most
// MaxInboundIDLength bytes), ToPhone decides the organization (its active
// sender number with that phone), ConversationID is the conversation its
// outbound messages to the writer have, At defaults to now.
type Inbound = network.Inbound

// Receive stores an inbound message in the organization whose active
// sender number has in.ToPhone (docs/api.md, §Message lifecycle):
// direction inbound, status received, received_at = in.At, the number as
// its sender_number_id and to_phone, the writer as from_phone, and the
// network's conversation_id, so that it sits in the conversation of the
// organization's outbound messages to the writer. It counts in the day's
// received counter of the number, and against no limit.
//
// The organization is found in the central directory of sender numbers
// (central.active_sender_phones: the one organization whose number holds
// the phone, and central.sender_number_directory: that number is active),
// never by visiting tenant schemas; the insert then checks the number in
// the tenant's own table, in the transaction that stores the message and
// records its message.received event (Config.Events).
//
// A text that is an opt-out or opt-in keyword changes the organization's
// opt-out list in the same transaction (Config.Consent, docs/api.md
// §Opt-outs), and every inbound message moves its writer's service window
// for the number (last_inbound).
//
// Outcomes: ReceiptApplied (stored), ReceiptUnchanged (in.ID was stored
// before: a repeated report stores nothing) and ReceiptIgnored, without
// error, when the phone is no organization's active number. A report that
// is not a message (no id, a malformed phone or an unknown type) is a 422
// validation error.
func (s *Service) Receive(ctx context.Context, in Inbound) (ReceiptOutcome, error) {
	in, err := s.checkInbound(in)
	if err != nil {
		return "", err
	}
	to, err := phone.Normalize(in.ToPhone)
	if err != nil {
		return ReceiptIgnored, nil //nolint:nilerr // a phone that is not one is no organization's number
	}
	t, senderID, ok, err := s.activeNumber(ctx, to)
	if err != nil || !ok {
		return ReceiptIgnored, err
	}
	outcome := ReceiptIgnored
	err = s.prep.Tx(ctx, func(tx pgx.Tx) error {
		outcome = ReceiptIgnored
		store := s.storeInbound
		if s.cfg.Routed {
			store = s.storeInboundRouted
		}
		n, evs, err := store(ctx, tx, t, senderID, to, in)
		if err != nil {
			return fmt.Errorf("store inbound message %q: %w", in.ID, err)
		}
		switch {
		case n > 0:
			outcome = ReceiptApplied
			if s.cfg.Consent != nil && in.Type == TypeText {
				if err := s.cfg.Consent.ApplyKeyword(ctx, tx, t, consent.InboundText{
					NetworkID: in.ID, SenderID: senderID, SenderPhone: to, From: in.FromPhone, Text: in.Content, At: in.At,
				}); err != nil {
					return err
				}
			}
		default:
			// Nothing stored: a repeat of a stored message, or a number
			// no longer active in the tenant's own table.
			var seen bool
			if err := db.QueryRowNamed(ctx, tx, s.q, "inbound_seen", t.Quoted(), sqlq.Args{"network_id": in.ID}).Scan(&seen); err != nil {
				return fmt.Errorf("find inbound message %q: %w", in.ID, err)
			}
			if seen {
				outcome = ReceiptUnchanged
			}
		}
		return s.changes.Emit(ctx, tx, t, evs)
	})
	if err != nil {
		return "", err
	}
	s.log.InfoContext(ctx, "inbound message", "schema", t.Schema, "network_inbound_id", in.ID, "outcome", outcome)
	return outcome, nil
}

// storeInbound stores in, to the active sender number senderID of phone
// to of tenant t, in tx, in one statement: the message (nothing when the
// number is not active in the tenant's table, or in.ID was stored before),
// and for a stored one its day's received counter and last_inbound. It
// returns how many messages it stored (0 or 1) and their events.
func (s *Service) storeInbound(ctx context.Context, tx pgx.Tx, t db.Tenant, senderID int64, to string, in Inbound) (int, []webhooks.Event, error) {
	query, args, err := s.q.Pgx("store_inbound", t.Quoted(), inboundArgs(senderID, to, in, s.clock.Now()))
	if err != nil {
		return 0, nil, err
	}
	return s.changes.Run(ctx, tx, query, args, 1)
}

// inboundArgs are the arguments of the statements that insert inbound
// message in, to sender number senderID of phone to, at now:
// store_inbound and routed_insert_inbound.
func inboundArgs(senderID int64, to string, in Inbound, now time.Time) sqlq.Args {
	return sqlq.Args{
		"sender_id": senderID, "to_phone": to, "from_phone": in.FromPhone,
		"conversation_id": db.Null(in.ConversationID), "type": in.Type, "content": in.Content,
		"file_name": db.Null(in.FileName), "file_size": db.Null(in.FileSize), "file_type": db.Null(in.FileType),
		"duration": db.Null(int64(in.Duration)), "received_at": in.At, "network_id": in.ID, "now": now,
	}
}

// checkInbound validates an inbound report (422 with every problem) and
// fills its defaults.
func (s *Service) checkInbound(in Inbound) (Inbound, error) {
	var v apperr.Validation
	switch {
	case strings.TrimSpace(in.ID) == "":
		v.Add("id", "is required")
	case len(in.ID) > MaxInboundIDLength:
		v.Add("id", fmt.Sprintf("must be at most %d bytes", MaxInboundIDLength))
	case !utf8.ValidString(in.ID) || hasControl(in.ID):
		v.Add("id", "must be UTF-8 without control characters")
	}
	from, err := phone.Normalize(in.FromPhone)
	if err != nil {
		v.Add("from_phone", err.Error())
	}
	in.FromPhone = from
	if strings.TrimSpace(in.ToPhone) == "" {
		v.Add("to_phone", "is required")
	}
	switch in.Type {
	case TypeText, TypeImage, TypeVoice, TypeDocument:
	default:
		v.Add("type", "must be one of text, image, voice, document")
	}
	if strings.ContainsRune(in.Content, 0) || strings.ContainsRune(in.FileName, 0) || strings.ContainsRune(in.FileType, 0) {
		v.Add("content", "must not contain NUL characters")
	}
	if in.FileSize < 0 || in.Duration < 0 {
		v.Add("file_size", "must not be negative")
	}
	if err := v.Err(); err != nil {
		return Inbound{}, err
	}
	if in.At.IsZero() {
		in.At = s.clock.Now()
	}
	return in, nil
}

// activeNumber finds the organization whose active sender number has phone
// p, in the central directory: the tenant and the number's id, ok false
// when no organization's number is active with it.
func (s *Service) activeNumber(ctx context.Context, p string) (db.Tenant, int64, bool, error) {
	var (
		orgID, senderID int64
		schema          sql.NullString
		found           bool
	)
	err := s.prep.Named(ctx, nil, s.q, "active_number", "", sqlq.Args{"phone": p}, func(r db.Rows) error {
		if !r.Next() {
			return nil
		}
		found = true
		return r.Scan(&orgID, &schema, &senderID)
	})
	if err != nil {
		return db.Tenant{}, 0, false, fmt.Errorf("find the active sender number %s: %w", p, err)
	}
	if !found || !schema.Valid {
		return db.Tenant{}, 0, false, nil
	}
	t, err := db.NewTenant(orgID, schema.String)
	if err != nil {
		return db.Tenant{}, 0, false, nil //nolint:nilerr // a corrupted schema name routes nothing
	}
	return t, senderID, true, nil
}
