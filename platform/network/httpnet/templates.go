package httpnet

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/bizmsg/platform/platform/apperr"
	"github.com/bizmsg/platform/platform/network"
)

// PathTemplates is where a template is posted for review → 202
// {"reference", "status": "pending"}, 422 refusal. The verdict comes later
// as a template.reviewed event.
const PathTemplates = "/v1/templates"

// EventTemplateReviewed is the event of the network's review of a
// submitted template, or of its operator's later change of its status;
// data TemplateReviewed.
const EventTemplateReviewed = "template.reviewed"

// templateJSON is a template submitted for review, on the wire.
type templateJSON struct {
	Reference string            `json:"reference"`
	Name      string            `json:"name"`
	Language  string            `json:"language"`
	Category  string            `json:"category"`
	Header    string            `json:"header,omitempty"`
	Body      string            `json:"body"`
	Footer    string            `json:"footer,omitempty"`
	Examples  map[string]string `json:"examples"`
}

// submittedJSON is the answer to a submission.
type submittedJSON struct {
	Reference string `json:"reference"`
	Status    string `json:"status"`
}

// TemplateReviewed is the data of template.reviewed.
type TemplateReviewed struct {
	// Reference is the one the platform submitted the template with.
	Reference string `json:"reference"`
	// Status is approved, rejected, paused or disabled.
	Status string `json:"status"`
	// Reason says why (a rejection's rejected_reason). Optional.
	Reason string `json:"reason,omitempty"`
	// ReviewedAt is when the network decided. Default: the event's
	// occurred_at, else the time it is received.
	ReviewedAt *time.Time `json:"reviewed_at,omitempty"`
}

// verdictStatuses are the statuses a template.reviewed may carry.
var verdictStatuses = []string{network.TemplateApproved, network.TemplateRejected, network.TemplatePaused, network.TemplateDisabled}

// validate records what is wrong with r in v.
func (r *TemplateReviewed) validate(v *apperr.Validation) {
	if r.Reference == "" {
		v.Add("data.reference", "is required")
	}
	if !slices.Contains(verdictStatuses, r.Status) {
		v.Add("data.status", "must be one of approved, rejected, paused, disabled")
	}
}

// Verdict returns the verdict a template.reviewed reports, its time
// defaulted as At does with received; false for another type.
func (d Decoded) Verdict(received time.Time) (network.TemplateVerdict, bool) {
	r := d.TemplateReviewed
	if r == nil {
		return network.TemplateVerdict{}, false
	}
	return network.TemplateVerdict{Reference: r.Reference, Status: r.Status, Reason: r.Reason,
		At: d.At(r.ReviewedAt, received)}, true
}

// SubmitTemplate posts tpl for review (POST /v1/templates). Retrying is
// safe: the network reviews a reference once and answers a repeat as the
// first.
func (c *Client) SubmitTemplate(ctx context.Context, tpl network.Template) error {
	body, err := json.Marshal(templateJSON{
		Reference: tpl.Reference, Name: tpl.Name, Language: tpl.Language, Category: tpl.Category,
		Header: tpl.Header, Body: tpl.Body, Footer: tpl.Footer, Examples: tpl.Examples,
	})
	if err != nil {
		return fmt.Errorf("httpnet: encode template: %w", err)
	}
	var out submittedJSON
	if err := c.call(ctx, http.MethodPost, PathTemplates, body, &out, false); err != nil {
		if network.IsPermanent(err) {
			return err
		}
		return fmt.Errorf("submit template %s: %w", tpl.Reference, err)
	}
	return nil
}

// submitTemplate answers POST /v1/templates: 202 once the network took the
// template for review.
func (h *Handler) submitTemplate(w http.ResponseWriter, r *http.Request, body []byte) {
	var t templateJSON
	if err := json.Unmarshal(body, &t); err != nil {
		writeError(w, http.StatusBadRequest, CodeMalformedRequest, "the body must be a JSON template")
		return
	}
	err := h.cfg.Network.SubmitTemplate(r.Context(), network.Template{
		Reference: t.Reference, Name: t.Name, Language: t.Language, Category: t.Category,
		Header: t.Header, Body: t.Body, Footer: t.Footer, Examples: t.Examples,
	})
	h.answer(w, r, err, http.StatusAccepted, func() any {
		return submittedJSON{Reference: t.Reference, Status: "pending"}
	})
}
