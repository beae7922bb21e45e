package builtin

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/bizmsg/platform/platform/network"
	"github.com/bizmsg/platform/platform/sqlq"
)

// eventTemplate is the outbox kind of a template verdict.
const eventTemplate = "template"

// templatePayload is the payload of a template verdict event:
// network.TemplateVerdict, field for field (a conversion).
type templatePayload struct {
	Reference string    `json:"reference"`
	Status    string    `json:"status"`
	Reason    string    `json:"reason,omitempty"`
	At        time.Time `json:"at"`
}

// variableRE is one variable of a template text, {{1}} or {{name}}.
var variableRE = regexp.MustCompile(`\{\{[a-z0-9_]+\}\}`)

// ReviewTemplate is the built-in network's review of a template body
// (docs/api.md, §Templates): the reason it rejects the body, or "" when it
// approves it. It rejects a body that starts or ends with a variable, or
// that has two variables with nothing but white space between them, since
// such a text reads as nothing but the sender's variables.
func ReviewTemplate(body string) string {
	body = strings.TrimSpace(body)
	locs := variableRE.FindAllStringIndex(body, -1)
	if len(locs) == 0 {
		return ""
	}
	first, last := locs[0], locs[len(locs)-1]
	switch {
	case first[0] == 0:
		return fmt.Sprintf("The body starts with a variable (%s): begin it with text.", body[first[0]:first[1]])
	case last[1] == len(body):
		return fmt.Sprintf("The body ends with a variable (%s): end it with text.", body[last[0]:last[1]])
	}
	for i := 1; i < len(locs); i++ {
		if strings.TrimSpace(body[locs[i-1][1]:locs[i][0]]) == "" {
			return fmt.Sprintf("The body has two variables with only spaces between them (%s and %s): put text between them.",
				body[locs[i-1][0]:locs[i-1][1]], body[locs[i][0]:locs[i][1]])
		}
	}
	return ""
}

// SubmitTemplate reviews tpl at once (ReviewTemplate) and writes its
// verdict, approved or rejected with the reason, to the outbox, which
// Drain gives to the platform (Sink.TemplateReviewed) within the drain
// interval. A template without a reference or body is a
// *network.PermanentError invalid_message.
func (n *Network) SubmitTemplate(ctx context.Context, tpl network.Template) error {
	if tpl.Reference == "" || strings.TrimSpace(tpl.Body) == "" {
		return fmt.Errorf("submit template: %w", permanent(network.CodeInvalidMessage, "the template has no reference or no body"))
	}
	v := templatePayload{Reference: tpl.Reference, Status: network.TemplateApproved, At: n.clock.Now().UTC()}
	if reason := ReviewTemplate(tpl.Body); reason != "" {
		v.Status, v.Reason = network.TemplateRejected, reason
	}
	payload, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("template verdict: %w", err)
	}
	if err := n.exec(ctx, "insert_event", sqlq.Args{"kind": eventTemplate, "payload": payload, "now": v.At}); err != nil {
		return network.Platform(fmt.Errorf("template verdict for %s: %w", v.Reference, err))
	}
	return nil
}
