package sendrequest

import (
	"fmt"

	"github.com/bizmsg/platform/platform/apperr"
	"github.com/bizmsg/platform/platform/messages"
)

// Body is the content of a message that is not a template: its type and
// content, and the file fields of a media type (nil when not given).
type Body struct {
	Type     string
	Content  string
	FileName *string
	FileSize *int64
	FileType *string
	Duration *int
}

// BodyInput is a body as a request gives it: nil is absent.
type BodyInput struct {
	Type     *string
	Content  *string
	FileName *string
	FileSize *int64
	FileType *string
	Duration *int64
}

// ValidateBody checks in by the rules of a send's body (docs/api.md,
// §Sending: text 1..4096 characters; image, voice, document an https URL
// with file_name, file_size and file_type within the type's limits; voice
// with duration), recording every problem in v under the request's field
// names, and returns the normalised body. Type template is not a body: it
// is refused here (a campaign names its template apart).
func ValidateBody(v *apperr.Validation, in BodyInput) Body {
	var b Body
	switch {
	case in.Type == nil:
		if !v.Has("type") {
			v.Add("type", "is required")
		}
		return b
	case *in.Type == messages.TypeText, *in.Type == messages.TypeImage, *in.Type == messages.TypeVoice,
		*in.Type == messages.TypeDocument:
		b.Type = *in.Type
	default:
		v.Add("type", "must be one of text, image, voice, document")
		return b
	}
	r := &SendRequest{Content: in.Content, FileName: in.FileName, FileSize: in.FileSize, FileType: in.FileType}
	var d Send
	validateContent(v, r, b.Type, &d)
	b.Content, b.FileName, b.FileSize, b.FileType = d.Content, d.FileName, d.FileSize, d.FileType
	// Duration: bounded whenever given; required for voice (as a send's).
	switch {
	case in.Duration != nil && (*in.Duration < MinDuration || *in.Duration > MaxDuration):
		v.Add("duration", fmt.Sprintf("must be an integer from %d to %d (seconds)", MinDuration, MaxDuration))
	case in.Duration != nil && b.Type == messages.TypeVoice:
		n := int(*in.Duration)
		b.Duration = &n
	case in.Duration == nil && b.Type == messages.TypeVoice && !v.Has("duration"):
		v.Add("duration", "is required for voice messages")
	}
	return b
}
