package sendrequest

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/bizmsg/platform/platform/apperr"
	"github.com/bizmsg/platform/platform/templates"
)

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
// when it is resolved (package acceptance).
func validateTemplateRef(v *apperr.Validation, r *SendRequest, d *Send) {
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
