package campaigns

import (
	"strings"
	"testing"
	"time"

	"github.com/bizmsg/platform/platform/templates"
)

// TestCheckRows: valid rows are normalised and kept once, in order; a
// phone given twice counts as a duplicate; bad rows keep their number and
// say what is wrong; a template campaign's rows need every variable of
// the template and no other, a plain one's none.
func TestCheckRows(t *testing.T) {
	t.Parallel()
	tpl := &templates.Template{Body: "Hi {{first_name}} from {{shop}}", Variables: []string{"first_name", "shop"}}
	vars := func(first, shop string) map[string]string { return map[string]string{"first_name": first, "shop": shop} }
	rows := []Row{
		{N: 1, Phone: "+1 (415) 555-0100", Variables: vars("Ana", "Acme"), ClientReference: "r1"},
		{N: 2, Phone: "+14155550100", Variables: vars("Bo", "Acme")},
		{N: 3, Phone: "+14155550101", Variables: map[string]string{"first_name": "Cy"}},
		{N: 4, Phone: "+14155550102", Variables: map[string]string{"first_name": "Di", "shop": "Acme", "x": "y"}},
		{N: 5, Phone: "0415", Variables: vars("Ed", "Acme")},
		{N: 6, Phone: "", Variables: vars("Fa", "Acme")},
		{N: 7, Phone: "+14155550103", Problem: "phone must be a string"},
		{N: 8, Phone: "+14155550104", Variables: vars("Gi", "Acme"), ClientReference: "a\x00b"},
		{N: 9, Phone: "+14155550105", Variables: vars(strings.Repeat("a", 1025), "Acme")},
		{N: 10, Phone: "+14155550106", Variables: vars("Hu", "Acme")},
	}
	b, out := checkRows(rows, tpl)
	if strings.Join(b.phones, ",") != "+14155550100,+14155550106" || out.Duplicates != 1 {
		t.Fatalf("kept %v, %d duplicates", b.phones, out.Duplicates)
	}
	if b.refs[0] == nil || *b.refs[0] != "r1" || b.refs[1] != nil || b.variables[0] == nil ||
		*b.variables[0] != `{"first_name":"Ana","shop":"Acme"}` {
		t.Fatalf("batch %+v", b)
	}
	want := map[int]string{3: "variables.shop", 4: "variables.x", 5: "phone", 6: "phone is required",
		7: "phone must be a string", 8: "client_reference", 9: "variables.first_name"}
	if len(out.Invalid) != len(want) {
		t.Fatalf("invalid %+v", out.Invalid)
	}
	for _, inv := range out.Invalid {
		if !strings.Contains(inv.Error, want[inv.Row]) {
			t.Errorf("row %d: %q, want it to say %q", inv.Row, inv.Error, want[inv.Row])
		}
	}

	b, out = checkRows([]Row{{N: 1, Phone: "+14155550100"}, {N: 2, Phone: "+14155550101", Variables: vars("a", "b")}}, nil)
	if len(b.phones) != 1 || b.variables[0] != nil || len(out.Invalid) != 1 || out.Invalid[0].Row != 2 {
		t.Fatalf("plain campaign: %+v %+v", b, out)
	}
}

// TestCreateDefaults: what a minimal request stores, and send_at's
// bounds measured from the given time.
func TestCreateDefaults(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	name, typ, content := "Sale", "text", "Hello"
	r := &CreateRequest{Name: &name, SenderNumberIDs: []int64{3, 1}, senders: true, Type: &typ, Content: &content}
	sp, err := r.validate(now)
	if err != nil {
		t.Fatal(err)
	}
	if sp.reservePercent != DefaultReservePercent || sp.sendAt != nil || sp.template != nil || sp.body.Content != content ||
		sp.senders[0] != 3 {
		t.Fatalf("spec %+v", sp)
	}
	for at, ok := range map[time.Time]bool{
		now: false, now.Add(time.Second): true, now.Add(MaxSendAhead): true, now.Add(MaxSendAhead + time.Second): false,
	} {
		s := at.Format(time.RFC3339)
		r.SendAt = &s
		if _, err := r.validate(now); (err == nil) != ok {
			t.Errorf("send_at %s: %v, want accepted %v", s, err, ok)
		}
	}
}
