package templates_test

import (
	"strings"
	"testing"

	"github.com/bizmsg/platform/platform/fuzzcheck"
	"github.com/bizmsg/platform/platform/templates"
)

// FuzzValidate: any template request is a template or a 422 naming the
// bad fields (examples.<name> included); never a 500. An accepted
// template's variables each have an example, and it renders with them.
func FuzzValidate(f *testing.F) {
	for _, s := range [][7]string{
		{"welcome", "en", "marketing", "", "Hello {{1}}, welcome.", "", "Ana"},
		{"order_update", "en_US", "utility", "Order {{1}}", "Your order {{1}} ships {{2}}.", "Thanks", "A1"},
		{"", "", "", "", "", "", ""},
		{"Bad Name", "english", "promo", "{{1}} {{2}}", "{{1}}", "{{x}}", "\x00"},
		{"named", "ar", "authentication", "", "Code {{code}} for {{first_name}} now.", "", "1234"},
		{"mixed", "en", "utility", "", "Hi {{1}} and {{name}}.", "", "x"},
		{"gap", "en", "utility", "", "Hi {{2}} there.", "", "x"},
		{"ctl", "en", "utility", "\x01", "a\x7fb {{1}} c", "\x02", "y"},
	} {
		f.Add(s[0], s[1], s[2], s[3], s[4], s[5], s[6])
	}
	f.Fuzz(func(t *testing.T, name, language, category, header, body, footer, example string) {
		in := templates.Input{Name: &name, Language: &language, Category: &category, Header: &header,
			Body: &body, Footer: &footer, Examples: map[string]string{"1": example, "2": example, "name": example}}
		tpl, err := templates.Validate(in)
		if err != nil {
			fields := fuzzcheck.Refusal(t, err)
			for f := range fields {
				switch {
				case f == "name", f == "language", f == "category", f == "header", f == "body", f == "footer",
					strings.HasPrefix(f, "examples"):
				default:
					t.Fatalf("refusal names %q, not a field of the request", f)
				}
			}
			return
		}
		vars := map[string]string{}
		for _, v := range tpl.Variables {
			ex, ok := tpl.Examples[v]
			if !ok {
				t.Fatalf("variable %q has no example in %+v", v, tpl)
			}
			vars[v] = ex
		}
		if _, err := templates.Render(tpl, vars); err != nil {
			t.Fatalf("an accepted template does not render with its examples: %v", err)
		}
	})
}
