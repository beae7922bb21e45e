package messages

import (
	"strconv"
	"strings"
	"time"
	"unicode"
)

// Row is a tenant's messages row: the Message callers see, and the columns
// only the services read.
type Row struct {
	Message
	DispatchedAt *time.Time
	UpdatedAt    time.Time
	// TemplateRef is a template message's network.MessageTemplate as
	// JSON, for the network; nil for other messages.
	TemplateRef *string
}

// messageFields are a message row's columns in one order, each with its
// field: the column list of the statements that read messages (Columns) and
// the destinations of a positional scan (ScanDest) come from this one list,
// so they cannot disagree.
var messageFields = []struct {
	col string
	ptr func(*Row) any
}{
	{"id", func(r *Row) any { return &r.ID }},
	{"sender_number_id", func(r *Row) any { return &r.SenderNumberID }},
	{"to_phone", func(r *Row) any { return &r.ToPhone }},
	{"recipient_user_id", func(r *Row) any { return &r.RecipientUserID }},
	{"conversation_id", func(r *Row) any { return &r.ConversationID }},
	{"message_id", func(r *Row) any { return &r.NetworkMessageID }},
	{"type", func(r *Row) any { return &r.Type }},
	{"content", func(r *Row) any { return &r.Content }},
	{"file_name", func(r *Row) any { return &r.FileName }},
	{"file_size", func(r *Row) any { return &r.FileSize }},
	{"file_type", func(r *Row) any { return &r.FileType }},
	{"duration", func(r *Row) any { return &r.Duration }},
	{"status", func(r *Row) any { return &r.Status }},
	{"error_code", func(r *Row) any { return &r.ErrorCode }},
	{"error_message", func(r *Row) any { return &r.ErrorMessage }},
	{"client_reference", func(r *Row) any { return &r.ClientReference }},
	{"created_at", func(r *Row) any { return &r.CreatedAt }},
	{"sent_at", func(r *Row) any { return &r.SentAt }},
	{"delivered_at", func(r *Row) any { return &r.DeliveredAt }},
	{"failed_at", func(r *Row) any { return &r.FailedAt }},
	{"dispatched_at", func(r *Row) any { return &r.DispatchedAt }},
	{"updated_at", func(r *Row) any { return &r.UpdatedAt }},
	{"direction", func(r *Row) any { return &r.Direction }},
	{"from_phone", func(r *Row) any { return &r.FromPhone }},
	{"read_at", func(r *Row) any { return &r.ReadAt }},
	{"received_at", func(r *Row) any { return &r.ReceivedAt }},
	{"template_id", func(r *Row) any { return &r.TemplateID }},
	{"template_ref", func(r *Row) any { return &r.TemplateRef }},
	{"campaign_id", func(r *Row) any { return &r.CampaignID }},
	{"send_at", func(r *Row) any { return &r.SendAt }},
	{"canceled_at", func(r *Row) any { return &r.CanceledAt }},
}

// Columns lists a message row's columns of the messages table aliased m
// (m.id, m.sender_number_id, ...), in ScanDest's order.
var Columns = ColumnsOf("m")

// ColumnsOf lists a message row's columns of the messages table (or of a
// statement's result with its columns) aliased alias.
func ColumnsOf(alias string) string {
	cols := make([]string, len(messageFields))
	for i, f := range messageFields {
		cols[i] = alias + "." + f.col
	}
	return strings.Join(cols, ", ")
}

// ScanDest returns the destinations of r's columns in Columns order.
func (r *Row) ScanDest() []any {
	dest := make([]any, len(messageFields))
	for i, f := range messageFields {
		dest[i] = f.ptr(r)
	}
	return dest
}

// message is the row as callers see it.
func (r *Row) message() Message { return r.Message }

// Day is the UTC calendar day of t as the database's date type reads it:
// the day of a message's daily_usage counters is its acceptance's.
func Day(t time.Time) string { return t.UTC().Format(time.DateOnly) }

func hasControl(s string) bool {
	return strings.IndexFunc(s, unicode.IsControl) >= 0
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
