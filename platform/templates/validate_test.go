package templates_test

import (
	"strings"
	"testing"

	"github.com/bizmsg/platform/platform/apperr"
	"github.com/bizmsg/platform/platform/templates"
)

func ptr(s string) *string { return &s }

// valid returns a valid input with positional variables.
func valid() templates.Input {
	return templates.Input{
		Name: ptr("order_update"), Language: ptr("en_US"), Category: ptr("utility"),
		Header: ptr("Order {{1}}"), Body: ptr("Hello {{2}}, your order ships {{3}} today."), Footer: ptr("Reply STOP to opt out"),
		Examples: map[string]string{"1": "A-17", "2": "Ana", "3": "by noon"},
	}
}

// fieldErrors returns the field errors of err, failing when err is not a
// validation error.
func fieldErrors(t *testing.T, err error) map[string][]string {
	t.Helper()
	e, ok := apperr.As(err)
	if !ok || e.Code != "validation_failed" {
		t.Fatalf("want a validation error, got %v", err)
	}
	return e.Fields
}

func TestValidateAccepts(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		edit func(*templates.Input)
		vars []string
	}{
		{"positional", func(*templates.Input) {}, []string{"1", "2", "3"}},
		{"named in order of use", func(in *templates.Input) {
			in.Header = ptr("Hi {{first_name}}")
			in.Body = ptr("Dear {{first_name}}, code {{code}} expires soon.")
			in.Examples = map[string]string{"first_name": "Ana", "code": "123"}
		}, []string{"first_name", "code"}},
		{"no variables", func(in *templates.Input) {
			in.Header, in.Footer, in.Body, in.Examples = nil, nil, ptr("Thanks for your order."), nil
		}, []string{}},
		{"languages", func(in *templates.Input) { in.Language = ptr("ar") }, []string{"1", "2", "3"}},
		{"script and region", func(in *templates.Input) { in.Language = ptr("zh_Hant_TW") }, []string{"1", "2", "3"}},
		{"longest name and body", func(in *templates.Input) {
			in.Name = ptr(strings.Repeat("a", 512))
			in.Header, in.Examples = nil, map[string]string{"1": "x"}
			in.Body = ptr("x {{1}} " + strings.Repeat("é", 1024-8))
		}, []string{"1"}},
		{"multiline body", func(in *templates.Input) {
			in.Header, in.Examples = nil, map[string]string{"1": "x"}
			in.Body = ptr("Line one {{1}}\nline two.")
		}, []string{"1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			in := valid()
			tt.edit(&in)
			tpl, err := templates.Validate(in)
			if err != nil {
				t.Fatalf("Validate: %v", err)
			}
			if tpl.Status != templates.StatusPending {
				t.Errorf("status %q, want pending", tpl.Status)
			}
			if strings.Join(tpl.Variables, ",") != strings.Join(tt.vars, ",") {
				t.Errorf("variables %q, want %q", tpl.Variables, tt.vars)
			}
		})
	}
}

func TestValidateRefuses(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		edit  func(*templates.Input)
		field string
	}{
		{"no name", func(in *templates.Input) { in.Name = nil }, "name"},
		{"name too long", func(in *templates.Input) { in.Name = ptr(strings.Repeat("a", 513)) }, "name"},
		{"name uppercase", func(in *templates.Input) { in.Name = ptr("Order") }, "name"},
		{"name with dash", func(in *templates.Input) { in.Name = ptr("order-update") }, "name"},
		{"no language", func(in *templates.Input) { in.Language = nil }, "language"},
		{"language with dash", func(in *templates.Input) { in.Language = ptr("en-US") }, "language"},
		{"language unknown form", func(in *templates.Input) { in.Language = ptr("english") }, "language"},
		{"no category", func(in *templates.Input) { in.Category = nil }, "category"},
		{"unknown category", func(in *templates.Input) { in.Category = ptr("promo") }, "category"},
		{"no body", func(in *templates.Input) { in.Body = nil }, "body"},
		{"blank body", func(in *templates.Input) { in.Body = ptr("   ") }, "body"},
		{"body too long", func(in *templates.Input) { in.Body = ptr("{{1}}{{2}}{{3}}" + strings.Repeat("a", 1024)) }, "body"},
		{"body control character", func(in *templates.Input) { in.Body = ptr("Hi {{1}}{{2}}{{3}}\x00") }, "body"},
		{"header too long", func(in *templates.Input) { in.Header = ptr("{{1}}" + strings.Repeat("a", 56)) }, "header"},
		{"header two variables", func(in *templates.Input) {
			in.Header = ptr("{{1}} {{2}}")
			in.Body = ptr("Hi {{3}}.")
		}, "header"},
		{"header line break", func(in *templates.Input) { in.Header = ptr("Order\n{{1}}") }, "header"},
		{"footer too long", func(in *templates.Input) { in.Footer = ptr(strings.Repeat("a", 61)) }, "footer"},
		{"footer variable", func(in *templates.Input) {
			in.Footer = ptr("Bye {{4}}")
			in.Examples["4"] = "x"
		}, "footer"},
		{"mixed kinds", func(in *templates.Input) {
			in.Body = ptr("Hi {{2}} and {{name}} {{3}}.")
			in.Examples["name"] = "x"
		}, "body"},
		{"gap in positions", func(in *templates.Input) {
			in.Body = ptr("Hi {{2}} and {{4}}.")
			in.Examples = map[string]string{"1": "a", "2": "b", "4": "d"}
		}, "body"},
		{"not from one", func(in *templates.Input) {
			in.Header = nil
			in.Body = ptr("Hi {{2}}.")
			in.Examples = map[string]string{"2": "b"}
		}, "body"},
		{"bad variable", func(in *templates.Input) { in.Body = ptr("Hi {{2}} {{3}} {{First}}.") }, "body"},
		{"unclosed variable", func(in *templates.Input) { in.Body = ptr("Hi {{2}} {{3}} {{name.") }, "body"},
		{"missing example", func(in *templates.Input) { delete(in.Examples, "2") }, "examples.2"},
		{"unknown example", func(in *templates.Input) { in.Examples["9"] = "x" }, "examples.9"},
		{"empty example", func(in *templates.Input) { in.Examples["2"] = "" }, "examples.2"},
		{"long example", func(in *templates.Input) { in.Examples["2"] = strings.Repeat("a", 1025) }, "examples.2"},
		{"control in example", func(in *templates.Input) { in.Examples["2"] = "a\nb" }, "examples.2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			in := valid()
			tt.edit(&in)
			_, err := templates.Validate(in)
			if fields := fieldErrors(t, err); len(fields[tt.field]) == 0 {
				t.Errorf("no error on %s: %v", tt.field, fields)
			}
		})
	}
}

// TestValidateNamesEveryProblem: one answer names every bad field.
func TestValidateNamesEveryProblem(t *testing.T) {
	t.Parallel()
	_, err := templates.Validate(templates.Input{Name: ptr("Bad Name"), Language: ptr("en-us"), Category: ptr("x"),
		Footer: ptr("{{1}}")})
	fields := fieldErrors(t, err)
	for _, f := range []string{"name", "language", "category", "body", "footer"} {
		if len(fields[f]) == 0 {
			t.Errorf("no error on %s: %v", f, fields)
		}
	}
}

func TestRender(t *testing.T) {
	t.Parallel()
	tpl, err := templates.Validate(valid())
	if err != nil {
		t.Fatal(err)
	}
	got, err := templates.Render(tpl, map[string]string{"1": "B-2", "2": "Ana", "3": "{{1}}"})
	if err != nil {
		t.Fatal(err)
	}
	want := "Order B-2\n\nHello Ana, your order ships {{1}} today.\n\nReply STOP to opt out"
	if got != want {
		t.Errorf("rendered %q, want %q", got, want)
	}

	bodyOnly := templates.Template{Body: "Hi {{name}}, bye {{name}}.", Variables: []string{"name"}}
	if got, err := templates.Render(bodyOnly, map[string]string{"name": "Bo"}); err != nil || got != "Hi Bo, bye Bo." {
		t.Errorf("body only: %q, %v", got, err)
	}

	_, err = templates.Render(tpl, map[string]string{"1": "x", "2": "", "4": "y"})
	fields := fieldErrors(t, err)
	for _, f := range []string{"template.variables.2", "template.variables.3", "template.variables.4"} {
		if len(fields[f]) == 0 {
			t.Errorf("no error on %s: %v", f, fields)
		}
	}
	if len(fields["template.variables.1"]) != 0 {
		t.Errorf("error on a good variable: %v", fields)
	}
	_, err = templates.Render(tpl, map[string]string{"1": "x", "2": "a\x07", "3": strings.Repeat("a", 1025)})
	fields = fieldErrors(t, err)
	if len(fields["template.variables.2"]) == 0 || len(fields["template.variables.3"]) == 0 {
		t.Errorf("control character and length not refused: %v", fields)
	}
}

func TestPreview(t *testing.T) {
	t.Parallel()
	var svc *templates.Service // Preview and Render use no state of the service
	got, err := svc.Preview(valid())
	if want := "Order A-17\n\nHello Ana, your order ships by noon today.\n\nReply STOP to opt out"; err != nil || got != want {
		t.Fatalf("Preview = %q, %v; want %q", got, err, want)
	}
	in := valid()
	in.Footer = ptr("{{1}}")
	if _, err := svc.Preview(in); len(fieldErrors(t, err)["footer"]) == 0 {
		t.Fatalf("Preview of an invalid template: %v", err)
	}
}
