package acceptance

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/bizmsg/platform/platform/apperr"
	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/network"
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

// TemplateRef is the template object of a send of type template:
// {"name", "language", "variables": {"1": "Ana"} | {"first_name": "Ana"}}.
type TemplateRef struct {
	Name      string            `json:"name"`
	Language  string            `json:"language"`
	Variables map[string]string `json:"variables"`
}

// decodeTemplate decodes the template field of a send's body into r,
// recording a part of the wrong JSON type (under template,
// template.name, template.language, template.variables or
// template.variables.<name>) instead of failing.
func (r *SendRequest) decodeTemplate(raw json.RawMessage) {
	bad := func(field, msg string) {
		if r.typeErrors == nil {
			r.typeErrors = make(map[string]string)
		}
		r.typeErrors[field] = msg
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil {
		bad("template", "must be an object {name, language, variables}")
		return
	}
	ref := &TemplateRef{}
	str := func(name string, dst *string) {
		if v, ok := obj[name]; ok && !bytes.Equal(bytes.TrimSpace(v), []byte("null")) {
			if err := json.Unmarshal(v, dst); err != nil {
				bad("template."+name, "must be a string")
			}
		}
	}
	str("name", &ref.Name)
	str("language", &ref.Language)
	if v, ok := obj["variables"]; ok && !bytes.Equal(bytes.TrimSpace(v), []byte("null")) {
		var vars map[string]json.RawMessage
		if err := json.Unmarshal(v, &vars); err != nil {
			bad("template.variables", "must be an object of strings, such as {\"1\": \"Ana\"}")
		}
		ref.Variables = make(map[string]string, len(vars))
		for name, value := range vars {
			var s string
			if err := json.Unmarshal(value, &s); err != nil {
				bad(templates.VariablesField+name, "must be a string")
				continue
			}
			ref.Variables[name] = s
		}
	}
	r.Template = ref
}

// validateTemplateRef checks the template object of a send of type
// template: a name and a language. Content may not be given: it is the
// rendered template. The variables are checked against the template
// (renderTemplate).
func validateTemplateRef(v *apperr.Validation, r *SendRequest, d *draft) {
	if r.Content != nil {
		v.Add("content", "must not be given for template messages: the content is the template rendered with its variables")
	}
	ref := r.Template
	if ref == nil {
		if !v.Has("template") {
			v.Add("template", "is required for template messages: {name, language, variables}")
		}
		return
	}
	name, lang := strings.TrimSpace(ref.Name), strings.TrimSpace(ref.Language)
	if name == "" && !v.Has("template.name") {
		v.Add("template.name", "is required")
	}
	if lang == "" && !v.Has("template.language") {
		v.Add("template.language", "is required")
	}
	vars := ref.Variables
	if vars == nil {
		vars = map[string]string{}
	}
	d.Template = &TemplateRef{Name: name, Language: lang, Variables: vars}
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
func (s *Service) renderTemplate(ctx context.Context, t db.Tenant, ref *TemplateRef) (rendered, error) {
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
func renderResolved(tpl templates.Template, ref *TemplateRef) (rendered, error) {
	text, err := templates.Render(tpl, ref.Variables)
	if err != nil {
		return rendered{}, err
	}
	if utf8.RuneCountInString(text) > MaxTextLength {
		var v apperr.Validation
		v.Add("template.variables", fmt.Sprintf("make a message of %d characters; the most is %d",
			utf8.RuneCountInString(text), MaxTextLength))
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
