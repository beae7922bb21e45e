package templates

import (
	"slices"
	"strings"

	"github.com/bizmsg/platform/platform/apperr"
)

// VariablesField is the field under which a send's variable problems are
// named: "template.variables.<name>" (docs/api.md, §Templates).
const VariablesField = "template.variables."

// Render returns the text of tpl with vars: header, body and footer, each
// with its variables replaced, joined by blank lines (an absent header or
// footer leaves no blank line). A variable of tpl missing from vars, a
// name of vars that is not one of tpl's, or a value that is not 1..1024
// characters without control characters is a validation error under
// template.variables.<name>, every one at once.
func Render(tpl Template, vars map[string]string) (string, error) {
	var v apperr.Validation
	for _, name := range tpl.Variables {
		value, ok := vars[name]
		if !ok {
			v.Add(VariablesField+name, "is required: the template has {{"+name+"}}")
			continue
		}
		checkValue(&v, VariablesField+name, value)
	}
	for name := range vars {
		if !slices.Contains(tpl.Variables, name) {
			v.Add(VariablesField+name, "is not a variable of the template")
		}
	}
	if err := v.Err(); err != nil {
		return "", err
	}
	parts := make([]string, 0, 3)
	for _, text := range []string{tpl.Header, tpl.Body, tpl.Footer} {
		if text != "" {
			parts = append(parts, fill(text, vars))
		}
	}
	return strings.Join(parts, "\n\n"), nil
}

// fill replaces the variables of text (a validated template text) with
// their values.
func fill(text string, vars map[string]string) string {
	ps := placeholders(nil, "", text)
	if len(ps) == 0 {
		return text
	}
	var b strings.Builder
	last := 0
	for _, p := range ps {
		b.WriteString(text[last:p.start])
		b.WriteString(vars[p.name])
		last = p.end
	}
	b.WriteString(text[last:])
	return b.String()
}

// Render is the package's Render, for callers that hold the service (the
// dashboard).
func (s *Service) Render(tpl Template, vars map[string]string) (string, error) {
	return Render(tpl, vars)
}

// Preview validates in as Create does, storing nothing, and renders it with
// its examples: the text a recipient of the template would get, for a
// live preview while a template is written. Its errors are Create's
// validation errors.
func (s *Service) Preview(in Input) (string, error) {
	tpl, err := Validate(in)
	if err != nil {
		return "", err
	}
	return Render(tpl, tpl.Examples)
}
