package acceptance

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"mime"
	"net/url"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/bizmsg/platform/platform/apperr"
	"github.com/bizmsg/platform/platform/phone"
	"github.com/bizmsg/platform/platform/senders"

	"github.com/bizmsg/platform/platform/messages"
)

// Limits of a send (docs/api.md, §Sending). Sizes are in bytes; a megabyte
// is 1,048,576 bytes.
const (
	MaxTextLength           = 4096
	MaxMediaURLLength       = 2048
	MaxFileNameLength       = 255
	MaxFileTypeLength       = 255
	MaxIdempotencyKeyLength = 255
	MinDuration             = 1
	MaxDuration             = 300
	MaxImageSize            = 5 << 20
	MaxVoiceSize            = 16 << 20
	MaxDocumentSize         = 100 << 20
	// MaxScheduleAhead is how far ahead send_at may be (docs/api.md,
	// §Scheduled sends): 35 days.
	MaxScheduleAhead = 35 * 24 * time.Hour
)

// IdempotencyKeyHeader carries a send's idempotency key.
const IdempotencyKeyHeader = "Idempotency-Key"

// SendRequest is the body of POST /messages. Decoding never fails on a
// field of the wrong JSON type: the problem is kept and reported by Send
// with every other field error, so a client sees all its mistakes at once.
//
// The json tags name the fields for httpx.BindJSON's NUL check (a NUL in
// content is refused naming "content"); UnmarshalJSON does the decoding.
type SendRequest struct {
	ToPhone         *string `json:"to_phone"`
	Type            *string `json:"type"`
	SenderNumberID  *int64  `json:"sender_number_id"`
	SenderPhone     *string `json:"sender_phone"`
	Content         *string `json:"content"`
	Duration        *int64  `json:"duration"`
	FileName        *string `json:"file_name"`
	FileSize        *int64  `json:"file_size"`
	FileType        *string `json:"file_type"`
	ClientReference *string `json:"client_reference"`
	// Template names the template of a message of type template.
	Template *TemplateRef `json:"template"`
	// SendAt, RFC 3339, schedules the send (docs/api.md, §Scheduled
	// sends); absent or null sends at once.
	SendAt *string `json:"send_at"`
	// IdempotencyKey comes from the Idempotency-Key header, not the body.
	IdempotencyKey string `json:"-"`

	// typeErrors holds the fields of the wrong JSON type, with their message.
	typeErrors map[string]string
}

// UnmarshalJSON decodes the body's known fields one by one, recording a field
// of the wrong type instead of failing. Unknown fields are ignored; null is
// the same as absent.
func (r *SendRequest) UnmarshalJSON(b []byte) error {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	field := func(name string, dst any, want string) {
		v, ok := raw[name]
		if !ok || bytes.Equal(bytes.TrimSpace(v), []byte("null")) {
			return
		}
		if err := json.Unmarshal(v, dst); err != nil {
			if r.typeErrors == nil {
				r.typeErrors = make(map[string]string)
			}
			r.typeErrors[name] = "must be " + want
		}
	}
	var s struct {
		ToPhone, Type, SenderPhone, Content, FileName, FileType, ClientReference, SendAt string
		SenderNumberID, Duration, FileSize                                               int64
	}
	field("to_phone", &s.ToPhone, "a string")
	field("type", &s.Type, "a string")
	field("sender_number_id", &s.SenderNumberID, "an integer")
	field("sender_phone", &s.SenderPhone, "a string")
	field("content", &s.Content, "a string")
	field("duration", &s.Duration, "an integer")
	field("file_name", &s.FileName, "a string")
	field("file_size", &s.FileSize, "an integer")
	field("file_type", &s.FileType, "a string")
	field("client_reference", &s.ClientReference, "a string")
	field("send_at", &s.SendAt, "an RFC 3339 time string, such as 2026-11-22T14:03:05Z")
	ok := func(name string) bool {
		_, bad := r.typeErrors[name]
		return present(raw, name) && !bad
	}
	set := func(name string, dst **string, v string) {
		if ok(name) {
			*dst = &v
		}
	}
	setInt := func(name string, dst **int64, v int64) {
		if ok(name) {
			*dst = &v
		}
	}
	set("to_phone", &r.ToPhone, s.ToPhone)
	set("type", &r.Type, s.Type)
	setInt("sender_number_id", &r.SenderNumberID, s.SenderNumberID)
	set("sender_phone", &r.SenderPhone, s.SenderPhone)
	set("content", &r.Content, s.Content)
	setInt("duration", &r.Duration, s.Duration)
	set("file_name", &r.FileName, s.FileName)
	setInt("file_size", &r.FileSize, s.FileSize)
	set("file_type", &r.FileType, s.FileType)
	set("client_reference", &r.ClientReference, s.ClientReference)
	set("send_at", &r.SendAt, s.SendAt)
	if present(raw, "template") {
		r.decodeTemplate(raw["template"])
	}
	return nil
}

func present(raw map[string]json.RawMessage, name string) bool {
	v, ok := raw[name]
	return ok && !bytes.Equal(bytes.TrimSpace(v), []byte("null"))
}

// draft is a validated, normalised send.
type draft struct {
	ToPhone         string       `json:"to_phone"`
	Type            string       `json:"type"`
	Sender          sender       `json:"sender"`
	Content         string       `json:"content"`
	FileName        *string      `json:"file_name,omitempty"`
	FileSize        *int64       `json:"file_size,omitempty"`
	FileType        *string      `json:"file_type,omitempty"`
	Duration        *int         `json:"duration,omitempty"`
	ClientReference *string      `json:"client_reference,omitempty"`
	Template        *TemplateRef `json:"template,omitempty"`
	// SendAt schedules the send (UTC); nil sends at once.
	SendAt *time.Time `json:"send_at,omitempty"`
}

// row is the outbound message d writes in status, accepted at now: its
// recipient, body and client reference. The path that stores it sets what
// it knows besides (the sender, the recipient's account, the template,
// send_at).
func (d draft) row(status string, now time.Time) *messages.Row {
	m := messages.Message{Direction: messages.DirectionOutbound, ToPhone: d.ToPhone, Type: d.Type, Content: d.Content,
		FileName: d.FileName, FileSize: d.FileSize, FileType: d.FileType, Duration: d.Duration,
		Status: status, ClientReference: d.ClientReference, CreatedAt: now}
	return &messages.Row{Message: m, UpdatedAt: now}
}

// sender is how the request named its sender number.
type sender struct {
	ID    int64  `json:"id,omitempty"`
	Phone string `json:"phone,omitempty"`
}

func (s sender) ref() senders.SenderRef { return senders.SenderRef{ID: s.ID, Phone: s.Phone} }

// fingerprint identifies the request for its idempotency key: a hash of the
// normalised request, so the same send written with other whitespace, key
// order or phone formatting is the same request.
func (d draft) fingerprint() []byte {
	b, err := json.Marshal(d)
	if err != nil {
		// A struct of strings and numbers always encodes.
		panic(fmt.Sprintf("messages: fingerprint: %v", err))
	}
	sum := sha256.Sum256(b)
	return sum[:]
}

// validate checks every rule of a send made at now and returns the
// normalised draft, or a 422 carrying every field error at once.
func (r *SendRequest) validate(now time.Time) (draft, error) {
	v := new(apperr.Validation)
	for name, msg := range r.typeErrors {
		v.Add(name, msg)
	}
	var d draft

	// Recipient.
	switch {
	case r.ToPhone == nil && !v.Has("to_phone"):
		v.Add("to_phone", "is required")
	case r.ToPhone != nil:
		p, err := phone.Normalize(*r.ToPhone)
		if err != nil {
			v.Add("to_phone", err.Error())
		}
		d.ToPhone = p
	}

	// Type.
	typ := ""
	switch {
	case r.Type == nil && !v.Has("type"):
		v.Add("type", "is required")
	case r.Type != nil:
		switch *r.Type {
		case messages.TypeText, messages.TypeImage, messages.TypeVoice, messages.TypeDocument, messages.TypeTemplate:
			typ = *r.Type
		default:
			v.Add("type", "must be one of text, image, voice, document, template")
		}
	}
	d.Type = typ

	// Sender: exactly one number, named by id, phone or both.
	if r.SenderNumberID == nil && r.SenderPhone == nil && !v.Has("sender_number_id") && !v.Has("sender_phone") {
		v.Add("sender_number_id", "is required when sender_phone is not given")
		v.Add("sender_phone", "is required when sender_number_id is not given")
	}
	if r.SenderNumberID != nil {
		if *r.SenderNumberID <= 0 {
			v.Add("sender_number_id", "must be a positive integer")
		}
		d.Sender.ID = *r.SenderNumberID
	}
	if r.SenderPhone != nil {
		p, err := phone.Normalize(*r.SenderPhone)
		if err != nil {
			v.Add("sender_phone", err.Error())
		}
		d.Sender.Phone = p
	}

	// Content and the file fields, or the template.
	switch {
	case typ == messages.TypeTemplate:
		validateTemplateRef(v, r, &d)
	case typ != "":
		validateContent(v, r, typ, &d)
		if r.Template != nil {
			v.Add("template", "is only for messages of type template")
		}
	}

	// Duration: bounded whenever given; required for voice.
	if r.Duration != nil {
		if *r.Duration < MinDuration || *r.Duration > MaxDuration {
			v.Add("duration", fmt.Sprintf("must be an integer from %d to %d (seconds)", MinDuration, MaxDuration))
		} else if typ == messages.TypeVoice {
			n := int(*r.Duration)
			d.Duration = &n
		}
	} else if typ == messages.TypeVoice && !v.Has("duration") {
		v.Add("duration", "is required for voice messages")
	}

	// Client reference.
	if r.ClientReference != nil && *r.ClientReference != "" {
		ref := *r.ClientReference
		if v.Text("client_reference", ref, messages.MaxClientReferenceLength) {
			d.ClientReference = &ref
		}
	}

	// Scheduled send.
	if r.SendAt != nil {
		at, msg := checkSendAt(*r.SendAt, now)
		if msg != "" {
			v.Add("send_at", msg)
		} else {
			d.SendAt = &at
		}
	}

	// Idempotency key (a header, reported under its name).
	if k := r.IdempotencyKey; k != "" {
		switch {
		case len(k) > MaxIdempotencyKeyLength:
			v.Add(IdempotencyKeyHeader, fmt.Sprintf("must be at most %d characters", MaxIdempotencyKeyLength))
		case !printableASCII(k):
			v.Add(IdempotencyKeyHeader, "must consist of printable ASCII characters")
		}
	}
	if err := v.Err(); err != nil {
		return draft{}, err
	}
	return d, nil
}

// validateContent checks content and the file fields of a message of type typ.
func validateContent(v *apperr.Validation, r *SendRequest, typ string, d *draft) {
	if typ == messages.TypeText {
		switch {
		case r.Content == nil:
			if !v.Has("content") {
				v.Add("content", "is required")
			}
		case strings.TrimSpace(*r.Content) == "":
			v.Add("content", "must not be empty")
		case utf8.RuneCountInString(*r.Content) > MaxTextLength:
			v.Add("content", fmt.Sprintf("must be at most %d characters", MaxTextLength))
		case strings.ContainsRune(*r.Content, 0):
			// Postgres text cannot hold it; other control characters
			// (newlines, tabs) are a text's own.
			v.Add("content", "must not contain the NUL character (U+0000)")
		default:
			d.Content = *r.Content
		}
		return
	}

	// Media: content is the file's https URL.
	if r.Content == nil {
		if !v.Has("content") {
			v.Add("content", "is required: the https URL of the "+typ)
		}
	} else if msg := checkMediaURL(*r.Content); msg != "" {
		v.Add("content", msg)
	} else {
		d.Content = *r.Content
	}

	if r.FileName == nil {
		if !v.Has("file_name") {
			v.Add("file_name", "is required for "+typ+" messages")
		}
	} else {
		name := *r.FileName
		switch {
		case strings.TrimSpace(name) == "":
			v.Add("file_name", "must not be empty")
		case utf8.RuneCountInString(name) > MaxFileNameLength:
			v.Add("file_name", fmt.Sprintf("must be at most %d characters", MaxFileNameLength))
		case hasControl(name) || strings.ContainsAny(name, `/\`):
			v.Add("file_name", "must be a file name without a path or control characters")
		default:
			d.FileName = &name
		}
	}

	maxSize := maxFileSize(typ)
	if r.FileSize == nil {
		if !v.Has("file_size") {
			v.Add("file_size", "is required for "+typ+" messages")
		}
	} else {
		switch size := *r.FileSize; {
		case size < 1:
			v.Add("file_size", "must be a positive number of bytes")
		case size > maxSize:
			v.Add("file_size", fmt.Sprintf("must be at most %d bytes (%d MB) for %s messages", maxSize, maxSize>>20, typ))
		default:
			d.FileSize = &size
		}
	}

	if r.FileType == nil {
		if !v.Has("file_type") {
			v.Add("file_type", "is required for "+typ+" messages")
		}
	} else if mt, msg := checkMIME(*r.FileType, typ); msg != "" {
		v.Add("file_type", msg)
	} else {
		d.FileType = &mt
	}
}

// maxFileSize is the largest file_size of a media type.
func maxFileSize(typ string) int64 {
	switch typ {
	case messages.TypeImage:
		return MaxImageSize
	case messages.TypeVoice:
		return MaxVoiceSize
	default:
		return MaxDocumentSize
	}
}

// checkMediaURL returns why u is not an acceptable media URL, or "".
func checkMediaURL(u string) string {
	if u == "" {
		return "must not be empty"
	}
	if utf8.RuneCountInString(u) > MaxMediaURLLength {
		return fmt.Sprintf("must be at most %d characters", MaxMediaURLLength)
	}
	p, err := url.Parse(u)
	if err != nil || !strings.EqualFold(p.Scheme, "https") || p.Host == "" || p.Hostname() == "" {
		return "must be an absolute https URL"
	}
	if p.User != nil {
		return "must not carry credentials"
	}
	if hasControl(u) || strings.ContainsAny(u, " ") {
		return "must be an absolute https URL"
	}
	return ""
}

// checkMIME normalises a MIME type (lower case, parameters kept) and checks
// it against the message type; it returns why it is not acceptable, or "".
func checkMIME(raw, typ string) (string, string) {
	if len(raw) > MaxFileTypeLength {
		return "", fmt.Sprintf("must be at most %d characters", MaxFileTypeLength)
	}
	mt, params, err := mime.ParseMediaType(raw)
	if err != nil {
		return "", "must be a MIME type such as image/png"
	}
	main, sub, ok := strings.Cut(mt, "/")
	if !ok || main == "" || sub == "" || main == "*" || sub == "*" {
		return "", "must be a MIME type such as image/png"
	}
	switch {
	case typ == messages.TypeImage && main != "image":
		return "", "must be an image/* type for image messages"
	case typ == messages.TypeVoice && main != "audio":
		return "", "must be an audio/* type for voice messages"
	}
	if f := mime.FormatMediaType(mt, params); f != "" {
		return f, ""
	}
	return mt, ""
}

func hasControl(s string) bool {
	return strings.IndexFunc(s, unicode.IsControl) >= 0
}

func printableASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

// checkSendAt parses a send_at (RFC 3339) and checks that it is after now
// and at most MaxScheduleAhead after it (docs/api.md, §Scheduled sends).
// It returns the time in UTC, or why it is not acceptable.
func checkSendAt(raw string, now time.Time) (time.Time, string) {
	at, err := time.Parse(time.RFC3339, raw)
	if err != nil {
		return time.Time{}, "must be an RFC 3339 time, such as 2026-11-22T14:03:05Z"
	}
	switch {
	case !at.After(now):
		return time.Time{}, "must be in the future"
	case at.After(now.Add(MaxScheduleAhead)):
		return time.Time{}, fmt.Sprintf("must be at most %d days ahead", int(MaxScheduleAhead/(24*time.Hour)))
	}
	return at.UTC(), ""
}
