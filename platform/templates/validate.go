package templates

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/bizmsg/platform/platform/apperr"
)

// Limits of a template's fields (docs/api.md, §Templates).
const (
	// MaxNameLength is the longest name, in characters.
	MaxNameLength = 512
	// MaxBodyLength is the longest body, in characters.
	MaxBodyLength = 1024
	// MaxHeaderLength and MaxFooterLength bound the header and footer, in
	// characters.
	MaxHeaderLength = 60
	MaxFooterLength = 60
	// MaxValueLength is the longest variable value (example or send), in
	// characters.
	MaxValueLength = 1024
)

var (
	// nameRE is a template name: a-z, 0-9 and _.
	nameRE = regexp.MustCompile(`^[a-z0-9_]+$`)
	// languageRE is a BCP 47 tag written with _: a language (en, ar, fil),
	// optionally a script (zh_Hant) and a region (en_US, es_419).
	languageRE = regexp.MustCompile(`^[a-z]{2,3}(_[A-Z][a-z]{3})?(_([A-Z]{2}|[0-9]{3}))?$`)
	// positionalRE and namedRE are the two kinds of variable names.
	positionalRE = regexp.MustCompile(`^[1-9][0-9]*$`)
	namedRE      = regexp.MustCompile(`^[a-z_]+$`)
)

// Input is the body of POST /templates. Absent fields are errors, except
// header, footer and examples (a template without variables needs none).
type Input struct {
	Name     *string           `json:"name"`
	Language *string           `json:"language"`
	Category *string           `json:"category"`
	Header   *string           `json:"header"`
	Body     *string           `json:"body"`
	Footer   *string           `json:"footer"`
	Examples map[string]string `json:"examples"`
}

// placeholder is one {{name}} of a text, at bytes [start, end).
type placeholder struct {
	name       string
	start, end int
}

// placeholders returns the variables of text, in order. A "{{" without a
// closing "}}", or one around anything but a variable name, is a problem
// recorded in v under field (v nil: ignored, for texts already validated).
func placeholders(v *apperr.Validation, field, text string) []placeholder {
	var out []placeholder
	for i := 0; ; {
		open := strings.Index(text[i:], "{{")
		if open < 0 {
			return out
		}
		open += i
		closing := strings.Index(text[open+2:], "}}")
		if closing < 0 {
			if v != nil {
				v.Add(field, "has a {{ without a closing }}")
			}
			return out
		}
		end := open + 2 + closing + 2
		name := text[open+2 : end-2]
		if positionalRE.MatchString(name) || namedRE.MatchString(name) {
			out = append(out, placeholder{name: name, start: open, end: end})
		} else if v != nil {
			v.Add(field, fmt.Sprintf("%q is not a variable: write {{1}}, {{2}}, ... or a name of a-z and _ such as {{first_name}}",
				text[open:end]))
		}
		i = end
	}
}

// Validate checks in against the rules of docs/api.md, §Templates, and
// returns the template it describes (status pending), or a validation
// error naming every problem at once. Header, body and footer are trimmed
// of surrounding white space.
func Validate(in Input) (Template, error) {
	var v apperr.Validation
	tpl := Template{Status: StatusPending}
	tpl.Name = requiredField(&v, "name", in.Name, checkName)
	tpl.Language = requiredField(&v, "language", in.Language, checkLanguage)
	tpl.Category = requiredField(&v, "category", in.Category, checkCategory)
	tpl.Body = strings.TrimSpace(deref(in.Body))
	if tpl.Body == "" {
		v.Add("body", "is required")
	} else {
		checkText(&v, "body", tpl.Body, MaxBodyLength, true)
	}
	tpl.Header = strings.TrimSpace(deref(in.Header))
	checkText(&v, "header", tpl.Header, MaxHeaderLength, false)
	tpl.Footer = strings.TrimSpace(deref(in.Footer))
	checkText(&v, "footer", tpl.Footer, MaxFooterLength, false)

	header := placeholders(&v, "header", tpl.Header)
	if len(header) > 1 {
		v.Add("header", "may have at most one variable")
	}
	if len(placeholders(&v, "footer", tpl.Footer)) > 0 {
		v.Add("footer", "may not have variables")
	}
	body := placeholders(&v, "body", tpl.Body)
	// Never nil: a template without variables stores an empty list.
	tpl.Variables = append([]string{}, variableNames(&v, append(header, body...))...)
	tpl.Examples = checkExamples(&v, tpl.Variables, in.Examples)
	if err := v.Err(); err != nil {
		return Template{}, err
	}
	return tpl, nil
}

// requiredField returns in trimmed of surrounding white space, recording in
// v under field that it is required when that leaves nothing, else the
// problem check finds ("" for none).
func requiredField(v *apperr.Validation, field string, in *string, check func(string) string) string {
	s := strings.TrimSpace(deref(in))
	if s == "" {
		v.Add(field, "is required")
	} else if problem := check(s); problem != "" {
		v.Add(field, problem)
	}
	return s
}

// checkName is the rule of a template's name: at most MaxNameLength
// characters, lowercase letters, digits and _.
func checkName(s string) string {
	switch {
	case utf8.RuneCountInString(s) > MaxNameLength:
		return fmt.Sprintf("must be at most %d characters", MaxNameLength)
	case !nameRE.MatchString(s):
		return "must contain only lowercase letters a-z, digits and _"
	}
	return ""
}

// checkLanguage is the rule of a template's language (languageRE).
func checkLanguage(s string) string {
	if !languageRE.MatchString(s) {
		return "must be a language tag written with _, such as en, en_US, pt_BR or ar"
	}
	return ""
}

// checkCategory is the rule of a template's category, in a template or a
// list's filter: one of categories.
func checkCategory(s string) string {
	if slices.Contains(categories, s) {
		return ""
	}
	return "must be one of " + strings.Join(categories, ", ")
}

// checkText checks a template text: at most maxLen characters, and no
// control characters but line breaks and tabs where multiline allows them.
func checkText(v *apperr.Validation, field, s string, maxLen int, multiline bool) {
	if utf8.RuneCountInString(s) > maxLen {
		v.Add(field, fmt.Sprintf("must be at most %d characters", maxLen))
	}
	bad := strings.ContainsFunc(s, func(r rune) bool {
		return unicode.IsControl(r) && (!multiline || (r != '\n' && r != '\r' && r != '\t'))
	})
	if bad && multiline {
		v.Add(field, "must not contain control characters other than line breaks and tabs")
	} else if bad {
		v.Add(field, "must not contain control characters")
	}
}

// variableNames returns the distinct variables of ps: positional ones in
// numeric order, which must run 1, 2, ... without a gap; named ones in
// order of first use. The two kinds never mix.
func variableNames(v *apperr.Validation, ps []placeholder) []string {
	var positional, named []string
	for _, p := range ps {
		list := &named
		if positionalRE.MatchString(p.name) {
			list = &positional
		}
		if !slices.Contains(*list, p.name) {
			*list = append(*list, p.name)
		}
	}
	switch {
	case len(positional) > 0 && len(named) > 0:
		v.Add("body", "mixes positional variables ({{1}}) and named ones ({{name}}): use one kind")
		return nil
	case len(named) > 0:
		return named
	}
	sort.Slice(positional, func(i, j int) bool {
		a, _ := strconv.Atoi(positional[i])
		b, _ := strconv.Atoi(positional[j])
		return a < b
	})
	for i, name := range positional {
		if want := strconv.Itoa(i + 1); name != want {
			v.Add("body", fmt.Sprintf("positional variables must be numbered consecutively from 1: {{%s}} is missing", want))
			return nil
		}
	}
	return positional
}

// checkExamples checks that examples gives a valid value for each variable
// and no other, and returns them.
func checkExamples(v *apperr.Validation, vars []string, examples map[string]string) map[string]string {
	out := make(map[string]string, len(vars))
	for _, name := range vars {
		value, ok := examples[name]
		if !ok {
			v.Add("examples."+name, "is required: give an example value for {{"+name+"}}")
			continue
		}
		if checkValue(v, "examples."+name, value) {
			out[name] = value
		}
	}
	for name := range examples {
		if !slices.Contains(vars, name) {
			v.Add("examples."+name, "is not a variable of the template")
		}
	}
	return out
}

// checkValue checks a variable's value (an example or a send's): 1..1024
// characters, not blank, no control characters. It reports whether it
// passed.
func checkValue(v *apperr.Validation, field, value string) bool {
	if strings.TrimSpace(value) == "" {
		v.Add(field, "must not be empty")
		return false
	}
	return v.Text(field, value, MaxValueLength)
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
