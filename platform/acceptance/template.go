package acceptance

import (
	"context"
	"encoding/json"
	"fmt"
	"unicode/utf8"

	"github.com/bizmsg/platform/platform/apperr"
	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/network"
	"github.com/bizmsg/platform/platform/sendrequest"
	"github.com/bizmsg/platform/platform/templates"
)

// Templates is what the send path needs of the template service;
// *templates.Service is one.
type Templates interface {
	// Resolve returns the organization's approved template of name and
	// language, or 422 template_not_found / template_not_approved.
	Resolve(ctx context.Context, t db.Tenant, name, language string) (templates.Template, error)
	// Existing returns the organization's template of name and language,
	// whatever its status, or 422 template_not_found.
	Existing(ctx context.Context, t db.Tenant, name, language string) (templates.Template, error)
}

// rendered is a template send's template, resolved and rendered.
type rendered struct {
	// id is the template's; text the rendered content; ref the
	// template_ref to store.
	id   int64
	text string
	ref  string
}

// renderTemplate resolves the template a send names (approved, else 422
// template_not_found or template_not_approved) and renders it with the
// send's variables (field errors under template.variables.<name>): the
// template's id, the rendered text (at most MaxTextLength characters) and
// the template_ref to store.
func (s *Service) renderTemplate(ctx context.Context, t db.Tenant, ref *sendrequest.TemplateRef) (rendered, error) {
	if s.cfg.Templates == nil {
		return rendered{}, fmt.Errorf("messages: no template service (Config.Templates)")
	}
	tpl, err := s.cfg.Templates.Resolve(ctx, t, ref.Name, ref.Language)
	if err != nil {
		return rendered{}, err
	}
	return renderResolved(tpl, ref)
}

// renderResolved renders the resolved template tpl with the variables of
// ref (renderTemplate).
func renderResolved(tpl templates.Template, ref *sendrequest.TemplateRef) (rendered, error) {
	text, err := templates.Render(tpl, ref.Variables)
	if err != nil {
		return rendered{}, err
	}
	if utf8.RuneCountInString(text) > sendrequest.MaxTextLength {
		var v apperr.Validation
		v.Add("template.variables", fmt.Sprintf("make a message of %d characters; the most is %d",
			utf8.RuneCountInString(text), sendrequest.MaxTextLength))
		return rendered{}, v.Err()
	}
	stored, err := templateRef(tpl, ref.Variables)
	if err != nil {
		return rendered{}, err
	}
	return rendered{id: tpl.ID, text: text, ref: stored}, nil
}

// templateRef is the message's network.MessageTemplate as stored (JSON
// text in template_ref): the resolved template's name and language and the
// send's values.
func templateRef(tpl templates.Template, vars map[string]string) (string, error) {
	b, err := json.Marshal(network.MessageTemplate{Name: tpl.Name, Language: tpl.Language, Variables: vars})
	if err != nil {
		return "", fmt.Errorf("encode template reference: %w", err)
	}
	return string(b), nil
}

// errTemplateNotApproved is the refusal of an acceptance whose template
// stopped being approved between its resolution and the acceptance
// statement.
func errTemplateNotApproved() error {
	return apperr.Invalid(templates.CodeTemplateNotApproved,
		"The template is no longer approved for sending: the network paused, disabled or rejected it during the send.")
}
