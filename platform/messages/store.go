package messages

import (
	"strings"
	"time"
)

// row is a tenant's messages row: the Message callers see, and the two
// columns only the service reads.
type row struct {
	Message
	DispatchedAt *time.Time
	UpdatedAt    time.Time
}

// messageFields are a message row's columns in one order, each with its
// field: the column list of the delivery statements (messageColumns) and the
// destinations of a positional scan (scanDest) come from this one list, so
// they cannot disagree.
var messageFields = []struct {
	col string
	ptr func(*row) any
}{
	{"id", func(r *row) any { return &r.ID }},
	{"sender_number_id", func(r *row) any { return &r.SenderNumberID }},
	{"to_phone", func(r *row) any { return &r.ToPhone }},
	{"recipient_user_id", func(r *row) any { return &r.RecipientUserID }},
	{"conversation_id", func(r *row) any { return &r.ConversationID }},
	{"message_id", func(r *row) any { return &r.NetworkMessageID }},
	{"type", func(r *row) any { return &r.Type }},
	{"content", func(r *row) any { return &r.Content }},
	{"file_name", func(r *row) any { return &r.FileName }},
	{"file_size", func(r *row) any { return &r.FileSize }},
	{"file_type", func(r *row) any { return &r.FileType }},
	{"duration", func(r *row) any { return &r.Duration }},
	{"status", func(r *row) any { return &r.Status }},
	{"error_code", func(r *row) any { return &r.ErrorCode }},
	{"error_message", func(r *row) any { return &r.ErrorMessage }},
	{"client_reference", func(r *row) any { return &r.ClientReference }},
	{"created_at", func(r *row) any { return &r.CreatedAt }},
	{"sent_at", func(r *row) any { return &r.SentAt }},
	{"delivered_at", func(r *row) any { return &r.DeliveredAt }},
	{"failed_at", func(r *row) any { return &r.FailedAt }},
	{"dispatched_at", func(r *row) any { return &r.DispatchedAt }},
	{"updated_at", func(r *row) any { return &r.UpdatedAt }},
	{"direction", func(r *row) any { return &r.Direction }},
	{"from_phone", func(r *row) any { return &r.FromPhone }},
	{"read_at", func(r *row) any { return &r.ReadAt }},
	{"received_at", func(r *row) any { return &r.ReceivedAt }},
	{"template_id", func(r *row) any { return &r.TemplateID }},
}

// messageColumns lists messageFields' columns of the messages table aliased
// m (m.id, m.sender_number_id, ...).
var messageColumns = columnsOf("m")

// columnsOf lists messageFields' columns of the messages table (or of a
// statement's result with its columns) aliased alias.
func columnsOf(alias string) string {
	cols := make([]string, len(messageFields))
	for i, f := range messageFields {
		cols[i] = alias + "." + f.col
	}
	return strings.Join(cols, ", ")
}

// scanDest returns the destinations of r's columns in messageColumns order.
func (r *row) scanDest() []any {
	dest := make([]any, len(messageFields))
	for i, f := range messageFields {
		dest[i] = f.ptr(r)
	}
	return dest
}

// message is the row as callers see it.
func (r *row) message() Message { return r.Message }

// dayOf is the UTC calendar day of t as the database's date type reads it.
func dayOf(t time.Time) string { return t.UTC().Format(time.DateOnly) }

// nextMidnight is the start of the UTC day after t.
func nextMidnight(t time.Time) time.Time {
	y, m, d := t.UTC().Date()
	return time.Date(y, m, d+1, 0, 0, 0, 0, time.UTC)
}

// orgSettings are the organization's limits as the message paths need them.
type orgSettings struct {
	DefaultDailyLimit int
	SenderRate        *float64
	SenderBurst       *int
}
