package campaigns

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/bizmsg/platform/platform/apperr"
	"github.com/bizmsg/platform/platform/messages"
	"github.com/bizmsg/platform/platform/sendrequest"
)

// CreateRequest is the body of POST /campaigns. Decoding never fails on a
// field of the wrong JSON type: the problem is kept and reported by Create
// with every other field error.
//
// The json tags name the fields for httpx.BindJSON's NUL check;
// UnmarshalJSON does the decoding.
type CreateRequest struct {
	Name            *string       `json:"name"`
	SenderNumberIDs []int64       `json:"sender_number_ids"`
	Template        *TemplateName `json:"template"`
	Type            *string       `json:"type"`
	Content         *string       `json:"content"`
	FileName        *string       `json:"file_name"`
	FileSize        *int64        `json:"file_size"`
	FileType        *string       `json:"file_type"`
	Duration        *int64        `json:"duration"`
	SendAt          *string       `json:"send_at"`
	ReservePercent  *int64        `json:"reserve_percent"`

	// senders reports whether sender_number_ids was given.
	senders bool
	// typeErrors holds the fields of the wrong JSON type, with their message.
	typeErrors map[string]string
}

// UnmarshalJSON decodes the body's known fields one by one, recording a
// field of the wrong type instead of failing. Unknown fields are ignored;
// null is the same as absent.
func (r *CreateRequest) UnmarshalJSON(b []byte) error {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	field := func(name string, dst any, want string) bool {
		v, ok := raw[name]
		if !ok || bytes.Equal(bytes.TrimSpace(v), []byte("null")) {
			return false
		}
		if err := json.Unmarshal(v, dst); err != nil {
			if r.typeErrors == nil {
				r.typeErrors = make(map[string]string)
			}
			r.typeErrors[name] = "must be " + want
			return false
		}
		return true
	}
	str := func(name string, dst **string) {
		var s string
		if field(name, &s, "a string") {
			*dst = &s
		}
	}
	num := func(name string, dst **int64, want string) {
		var n int64
		if field(name, &n, want) {
			*dst = &n
		}
	}
	str("name", &r.Name)
	str("type", &r.Type)
	str("content", &r.Content)
	str("file_name", &r.FileName)
	str("file_type", &r.FileType)
	str("send_at", &r.SendAt)
	num("file_size", &r.FileSize, "an integer")
	num("duration", &r.Duration, "an integer")
	num("reserve_percent", &r.ReservePercent, "an integer from 0 to 100")
	var ids []int64
	if field("sender_number_ids", &ids, "an array of sender number ids") {
		r.SenderNumberIDs, r.senders = ids, true
	}
	var tpl TemplateName
	if field("template", &tpl, "an object {name, language}") {
		r.Template = &tpl
	}
	return nil
}

// spec is a validated CreateRequest: the campaign to store, its template
// still named (resolved by Create).
type spec struct {
	name           string
	senders        []int64
	template       *TemplateName
	body           sendrequest.Body
	sendAt         *time.Time
	reservePercent int
}

// validate checks every field of r (now is the time send_at is measured
// from) and returns the campaign, or a 422 naming every bad field.
func (r *CreateRequest) validate(now time.Time) (spec, error) {
	var v apperr.Validation
	for name, msg := range r.typeErrors {
		v.Add(name, msg)
	}
	var s spec

	switch {
	case r.Name == nil:
		if !v.Has("name") {
			v.Add("name", "is required")
		}
	case strings.TrimSpace(*r.Name) == "":
		v.Add("name", "must not be empty")
	default:
		s.name = v.TrimmedText("name", *r.Name, MaxNameLength)
	}

	switch {
	case !r.senders:
		if !v.Has("sender_number_ids") {
			v.Add("sender_number_ids", "is required: 1 to 50 sender number ids")
		}
	case len(r.SenderNumberIDs) == 0 || len(r.SenderNumberIDs) > MaxSenders:
		v.Add("sender_number_ids", fmt.Sprintf("must hold 1 to %d sender number ids", MaxSenders))
	default:
		for i, id := range r.SenderNumberIDs {
			switch {
			case id <= 0:
				v.Add("sender_number_ids", fmt.Sprintf("must hold positive ids (item %d is %d)", i, id))
			case slices.Contains(r.SenderNumberIDs[:i], id):
				v.Add("sender_number_ids", fmt.Sprintf("must hold distinct ids (%d is given twice)", id))
			}
		}
		s.senders = r.SenderNumberIDs
	}

	r.validateContent(&v, &s)

	if r.SendAt != nil {
		at, err := time.Parse(time.RFC3339Nano, strings.TrimSpace(*r.SendAt))
		switch {
		case err != nil:
			v.Add("send_at", "must be an RFC 3339 date-time such as 2026-11-22T14:03:05Z")
		case !at.After(now):
			v.Add("send_at", "must be in the future")
		case at.Sub(now) > MaxSendAhead:
			v.Add("send_at", "must be at most 35 days ahead")
		default:
			at = at.UTC()
			s.sendAt = &at
		}
	}

	s.reservePercent = DefaultReservePercent
	if r.ReservePercent != nil {
		if p := *r.ReservePercent; p < 0 || p > 100 {
			v.Add("reserve_percent", "must be an integer from 0 to 100")
		} else {
			s.reservePercent = int(p)
		}
	}
	if err := v.Err(); err != nil {
		return spec{}, err
	}
	return s, nil
}

// validateContent checks the campaign's content: a template {name,
// language} (type absent or "template", no content), or a plain body by
// the rules of a send's (sendrequest.ValidateBody).
func (r *CreateRequest) validateContent(v *apperr.Validation, s *spec) {
	isTemplate := r.Template != nil || (r.Type != nil && *r.Type == messages.TypeTemplate) || v.Has("template")
	if !isTemplate {
		if r.Type == nil && !v.Has("type") {
			v.Add("type", "is required when template is not given")
			return
		}
		s.body = sendrequest.ValidateBody(v, sendrequest.BodyInput{
			Type: r.Type, Content: r.Content, FileName: r.FileName, FileSize: r.FileSize, FileType: r.FileType,
			Duration: r.Duration,
		})
		return
	}
	s.body.Type = messages.TypeTemplate
	if r.Content != nil || r.FileName != nil || r.FileSize != nil || r.FileType != nil || r.Duration != nil {
		v.Add("content", "must not be given with a template: the content is the template rendered for each recipient")
	}
	if r.Type != nil && *r.Type != messages.TypeTemplate {
		v.Add("type", "must be template (or absent) when template is given")
	}
	if r.Template == nil {
		if !v.Has("template") {
			v.Add("template", "is required for a template campaign: {name, language}")
		}
		return
	}
	name, lang := strings.TrimSpace(r.Template.Name), strings.TrimSpace(r.Template.Language)
	if name == "" {
		v.Add("template.name", "is required")
	} else {
		v.Text("template.name", name, 512)
	}
	if lang == "" {
		v.Add("template.language", "is required")
	} else {
		v.Text("template.language", lang, 64)
	}
	s.template = &TemplateName{Name: name, Language: lang}
}
