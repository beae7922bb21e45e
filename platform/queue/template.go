package queue

import (
	"fmt"

	"github.com/riverqueue/river"
)

// TemplateReviewArgs is the job that submits a new message template to the
// messaging network for review. It is inserted in the transaction that
// creates the template, so a template and its submission commit together;
// the network's verdict comes back later (the built-in network's outbox,
// the HTTP network's signed event).
type TemplateReviewArgs struct {
	TenantRef
	// TemplateID is the template's id in the tenant schema.
	TemplateID int64 `json:"template_id"`
}

// Kind names the job in River.
func (TemplateReviewArgs) Kind() string { return "template_review" }

// Subject names what the job works on, in its errors.
func (a TemplateReviewArgs) Subject() string {
	return fmt.Sprintf("template %d in %s", a.TemplateID, a.Schema)
}

// InsertOpts bounds retries: a network that refuses a submission for a
// day will not accept it later; the template then stays pending until the
// operator decides.
func (TemplateReviewArgs) InsertOpts() river.InsertOpts { return river.InsertOpts{MaxAttempts: 20} }
