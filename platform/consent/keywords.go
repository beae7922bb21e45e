package consent

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bizmsg/platform/platform/apperr"
	"github.com/bizmsg/platform/platform/clock"
	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/network"
	"github.com/bizmsg/platform/platform/queue"
	"github.com/bizmsg/platform/platform/sqlq"
)

// InboundText is an inbound message as the keyword rule reads it.
type InboundText struct {
	// NetworkID is the network's id of the inbound message: the
	// confirmation's network reference derives from it, so a repeated
	// report or a retried job sends one confirmation.
	NetworkID string
	// SenderID and SenderPhone are the organization's number it came to.
	SenderID    int64
	SenderPhone string
	// From is the writer's phone; Text the message's text.
	From string
	Text string
	At   time.Time
}

// ApplyKeyword applies the keyword rule to an inbound text message just
// stored in tx (docs/api.md, §Opt-outs): an opt-out keyword puts the writer
// on the organization's list (source keyword), an opt-in keyword takes them
// off, each recording its event when the list changed, and either inserts
// the job that answers with the organization's confirmation text (none when
// that text is empty). Any other text changes nothing.
func (s *Service) ApplyKeyword(ctx context.Context, tx pgx.Tx, t db.Tenant, in InboundText) error {
	word, out, ok := Keyword(in.Text)
	if !ok {
		return nil
	}
	e := Entry{Phone: in.From, Source: SourceKeyword, Keyword: &word, SenderNumberID: &in.SenderID,
		CreatedAt: clock.Stamp(in.At)}
	var err error
	if out {
		_, _, err = s.optOut(ctx, tx, t, e)
	} else {
		_, _, err = s.optIn(ctx, tx, t, e)
	}
	if err != nil {
		return err
	}
	set, err := s.settings(ctx, tx, t)
	if err != nil {
		return err
	}
	optOutText, optInText := set.Replies()
	text := optInText
	if out {
		text = optOutText
	}
	if text == "" {
		return nil
	}
	_, err = s.jobs.InsertTx(ctx, tx, queue.ConsentReplyArgs{
		TenantRef: queue.RefOf(t), InboundID: in.NetworkID,
		From: in.SenderPhone, To: in.From, Text: text,
	}, nil)
	if err != nil {
		return fmt.Errorf("insert confirmation job: %w", err)
	}
	return nil
}

// SendReply sends a confirmation (a queue.ConsentReplyArgs job) from the
// number the keyword came to: past every limit and the opt-out itself,
// under the reference "consent:<schema>:<inbound id>", so that the network
// takes it once however often the job runs.
func (s *Service) SendReply(ctx context.Context, args queue.ConsentReplyArgs) error {
	_, err := s.net.Deliver(ctx, network.Message{
		Reference: "consent:" + args.Schema + ":" + args.InboundID,
		FromPhone: args.From, ToPhone: args.To, Media: network.Media{Type: "text", Content: args.Text},
	})
	if err != nil {
		return fmt.Errorf("send confirmation to an inbound keyword: %w", err)
	}
	return nil
}

// Settings returns organization t's confirmation texts.
func (s *Service) Settings(ctx context.Context, t db.Tenant) (Settings, error) {
	var out Settings
	err := s.q.Raw(s.db.Bun, "settings", sqlq.Args{"schema": t.SchemaIdent()}).
		Scan(ctx, &out.OptOutReply, &out.OptInReply, &out.UpdatedAt)
	if errors.Is(err, sql.ErrNoRows) {
		return Settings{}, nil
	}
	if err != nil {
		return Settings{}, fmt.Errorf("read opt-out settings: %w", err)
	}
	return out, nil
}

// settings reads the texts in tx (the inbound message's transaction).
func (s *Service) settings(ctx context.Context, tx pgx.Tx, t db.Tenant) (Settings, error) {
	var out Settings
	rows, err := s.query(ctx, tx, t, "settings", nil)
	if err == nil {
		var found bool
		found, err = scanOne(rows, &out.OptOutReply, &out.OptInReply, &out.UpdatedAt)
		if !found && err == nil {
			return Settings{}, nil
		}
	}
	if err != nil {
		return Settings{}, fmt.Errorf("read opt-out settings: %w", err)
	}
	return out, nil
}

// scanOne scans the first row of rows into dest and closes them; found is
// false when there is none.
func scanOne(rows pgx.Rows, dest ...any) (found bool, err error) {
	defer rows.Close()
	if rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return false, err
		}
		found = true
	}
	return found, rows.Err()
}

// SettingsRequest changes the texts: a nil field keeps the current text, ""
// sends no confirmation.
type SettingsRequest struct {
	OptOutReply *string
	OptInReply  *string
}

// PutSettings changes organization t's confirmation texts (each at most
// MaxReplyLength characters, no control characters, trimmed) and returns
// the texts in force. Errors: 422 with every field error.
func (s *Service) PutSettings(ctx context.Context, t db.Tenant, req SettingsRequest) (Settings, error) {
	var v apperr.Validation
	text := func(field string, p *string) *string {
		if p == nil {
			return nil
		}
		out := v.TrimmedText(field, *p, MaxReplyLength)
		return &out
	}
	out, in := text("opt_out_reply", req.OptOutReply), text("opt_in_reply", req.OptInReply)
	if err := v.Err(); err != nil {
		return Settings{}, err
	}
	var set Settings
	now := s.clock.Now()
	err := s.q.Raw(s.db.Bun, "put_settings", sqlq.Args{"schema": t.SchemaIdent(), "opt_out_reply": out,
		"opt_in_reply": in, "updated_at": now, "set_opt_out": out != nil, "set_opt_in": in != nil}).
		Scan(ctx, &set.OptOutReply, &set.OptInReply, &set.UpdatedAt)
	if err != nil {
		return Settings{}, fmt.Errorf("store opt-out settings: %w", err)
	}
	return set, nil
}

// MarshalJSON renders the settings resource: the texts in force ("" for
// none) and when they were last changed (null while never).
func (s Settings) MarshalJSON() ([]byte, error) {
	out, in := s.Replies()
	return json.Marshal(settingsJSON{OptOutReply: out, OptInReply: in, UpdatedAt: clock.FormatPtr(s.UpdatedAt)})
}
