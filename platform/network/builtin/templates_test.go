package builtin_test

import (
	"strings"
	"testing"

	"github.com/bizmsg/platform/platform/network"
	"github.com/bizmsg/platform/platform/network/builtin"
)

// Verdicts drains the outbox (Collect) and returns the template verdicts
// it gave, for the conformance test.
func (h *harness) Verdicts(t *testing.T) []network.TemplateVerdict {
	t.Helper()
	h.Collect(t)
	return h.rec.Verdicts()
}

func TestReviewTemplate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		body, reason string // reason: a substring; "" approves
	}{
		{"Hello {{1}}, welcome.", ""},
		{"Thanks for your order.", ""},
		{"Dear {{first_name}}, code {{code}} expires soon.", ""},
		{"Hi {{1}}, {{2}} is ready.", ""},
		{"{{1}} is your code.", "starts with a variable ({{1}})"},
		{"  {{name}} hi.", "starts with a variable"},
		{"Your code is {{1}}", "ends with a variable ({{1}})"},
		{"Your code is {{1}}\n", "ends with a variable"},
		{"Hi {{1}} {{2}} there.", "two variables with only spaces between them ({{1}} and {{2}})"},
		{"Hi {{1}}{{2}} there.", "two variables with only spaces"},
		{"Hi {{a}}   {{b}} there.", "two variables with only spaces"},
	}
	for _, tt := range tests {
		got := builtin.ReviewTemplate(tt.body)
		if (tt.reason == "") != (got == "") || !strings.Contains(got, tt.reason) {
			t.Errorf("ReviewTemplate(%q) = %q, want %q", tt.body, got, tt.reason)
		}
	}
}
