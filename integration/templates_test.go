package integration

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// Templates: docs/api.md, §Templates.

const templatesPath = "/api/v1/templates"

// template is the template resource.
type template struct {
	ID             int64             `json:"id"`
	Name           string            `json:"name"`
	Language       string            `json:"language"`
	Category       string            `json:"category"`
	Header         *string           `json:"header"`
	Body           string            `json:"body"`
	Footer         *string           `json:"footer"`
	Variables      []string          `json:"variables"`
	Examples       map[string]string `json:"examples"`
	Status         string            `json:"status"`
	RejectedReason *string           `json:"rejected_reason"`
	CreatedAt      string            `json:"created_at"`
	UpdatedAt      string            `json:"updated_at"`
}

// templateBody is a valid creation body with positional variables, with
// name and language.
func templateBody(name, language string) map[string]any {
	return map[string]any{
		"name": name, "language": language, "category": "utility",
		"header": "Order {{1}}", "body": "Hello {{2}}, your order ships today.", "footer": "Reply STOP to opt out",
		"examples": map[string]string{"1": "A-17", "2": "Ana"},
	}
}

// createTemplate creates a template with key and returns it.
func createTemplate(t *testing.T, e *Env, key map[string]string, body map[string]any) template {
	t.Helper()
	r := e.Do(Request{Method: http.MethodPost, Path: templatesPath, Header: key, Body: body})
	if r.Status != http.StatusCreated {
		t.Fatalf("create template = %d %s", r.Status, r.Body)
	}
	var out struct {
		Data template `json:"data"`
	}
	r.JSON(t, &out)
	return out.Data
}

// listTemplates lists with key and the query q.
func listTemplates(t *testing.T, e *Env, key map[string]string, q url.Values) ([]template, *string) {
	t.Helper()
	r := e.Do(Request{Method: http.MethodGet, Path: templatesPath + "?" + q.Encode(), Header: key})
	if r.Status != http.StatusOK {
		t.Fatalf("list templates = %d %s", r.Status, r.Body)
	}
	var out struct {
		Data       []template `json:"data"`
		NextCursor *string    `json:"next_cursor"`
	}
	r.JSON(t, &out)
	return out.Data, out.NextCursor
}

// fieldErrors returns the field errors of a 422 validation_failed.
func fieldErrors(t *testing.T, r *Response) map[string][]string {
	t.Helper()
	var body struct {
		Code   string              `json:"code"`
		Errors map[string][]string `json:"errors"`
	}
	r.JSON(t, &body)
	if r.Status != http.StatusUnprocessableEntity || body.Code != "validation_failed" {
		t.Fatalf("answer %d %s, want 422 validation_failed", r.Status, r.Body)
	}
	return body.Errors
}

// TestTemplateValidation: every rule of a template's fields is a 422 naming
// the field, and one answer names every bad field.
func TestTemplateValidation(t *testing.T) {
	t.Parallel()
	e := Start(t, Options{})
	key := e.Register(t).Key()
	with := func(edit func(map[string]any)) map[string]any {
		b := templateBody("order_update", "en_US")
		edit(b)
		return b
	}
	set := func(k string, v any) func(map[string]any) { return func(b map[string]any) { b[k] = v } }
	tests := []struct {
		name  string
		body  any
		field string
	}{
		{"no name", with(func(b map[string]any) { delete(b, "name") }), "name"},
		{"name too long", with(set("name", strings.Repeat("a", 513))), "name"},
		{"name with capitals", with(set("name", "Order_Update")), "name"},
		{"name with a dash", with(set("name", "order-update")), "name"},
		{"no language", with(func(b map[string]any) { delete(b, "language") }), "language"},
		{"language with a dash", with(set("language", "en-US")), "language"},
		{"language not a tag", with(set("language", "english")), "language"},
		{"no category", with(func(b map[string]any) { delete(b, "category") }), "category"},
		{"unknown category", with(set("category", "promotion")), "category"},
		{"no body", with(func(b map[string]any) { delete(b, "body") }), "body"},
		{"blank body", with(set("body", "  ")), "body"},
		{"body too long", with(set("body", "Hi {{2}} "+strings.Repeat("a", 1020))), "body"},
		{"body with a control character", with(set("body", "Hi {{2}}\u0007 there")), "body"},
		{"header too long", with(set("header", "Order {{1}} "+strings.Repeat("a", 50))), "header"},
		{"header with two variables", with(func(b map[string]any) {
			b["header"], b["body"] = "{{1}} and {{2}}", "Hello {{3}}, hi."
			b["examples"] = map[string]string{"1": "a", "2": "b", "3": "c"}
		}), "header"},
		{"footer too long", with(set("footer", strings.Repeat("a", 61))), "footer"},
		{"footer with a variable", with(func(b map[string]any) {
			b["footer"] = "Bye {{3}}"
			b["examples"] = map[string]string{"1": "a", "2": "b", "3": "c"}
		}), "footer"},
		{"mixed variables", with(func(b map[string]any) {
			b["body"] = "Hello {{2}} and {{first_name}}, hi."
			b["examples"] = map[string]string{"1": "a", "2": "b", "first_name": "c"}
		}), "body"},
		{"positions with a gap", with(func(b map[string]any) {
			b["body"] = "Hello {{3}}, hi."
			b["examples"] = map[string]string{"1": "a", "3": "c"}
		}), "body"},
		{"not a variable", with(set("body", "Hello {{2}} {{First Name}}, hi.")), "body"},
		{"unclosed variable", with(set("body", "Hello {{2}} {{name, hi.")), "body"},
		{"missing example", with(set("examples", map[string]string{"1": "a"})), "examples.2"},
		{"example of no variable", with(set("examples", map[string]string{"1": "a", "2": "b", "9": "c"})), "examples.9"},
		{"empty example", with(set("examples", map[string]string{"1": "a", "2": ""})), "examples.2"},
		{"example too long", with(set("examples", map[string]string{"1": "a", "2": strings.Repeat("b", 1025)})), "examples.2"},
		{"example with a line break", with(set("examples", map[string]string{"1": "a", "2": "b\nc"})), "examples.2"},
		{"examples not an object", with(set("examples", []string{"a", "b"})), "examples"},
		{"name not a string", with(set("name", 7)), "name"},
	}
	for _, tt := range tests {
		r := e.Do(Request{Method: http.MethodPost, Path: templatesPath, Header: key, Body: tt.body})
		if fields := fieldErrors(t, r); len(fields[tt.field]) == 0 {
			t.Errorf("%s: no error on %s: %s", tt.name, tt.field, r.Body)
		}
	}
	r := e.Do(Request{Method: http.MethodPost, Path: templatesPath, Header: key,
		Body: map[string]any{"name": "Bad Name", "language": "en-us", "category": "x", "footer": "{{1}}"}})
	fields := fieldErrors(t, r)
	for _, f := range []string{"name", "language", "category", "body", "footer"} {
		if len(fields[f]) == 0 {
			t.Errorf("one answer lacks %s: %s", f, r.Body)
		}
	}
	if n, _ := listTemplates(t, e, key, nil); len(n) != 0 {
		t.Errorf("refused templates were stored: %v", n)
	}
}

// TestTemplateAPI: creation (pending, every field), 409 on a repeated name
// and language, reads, list filters and paging, deletion, scopes and
// isolation between organizations.
func TestTemplateAPI(t *testing.T) {
	t.Parallel()
	e := Start(t, Options{})
	org, other := e.Register(t), e.Register(t)
	key := org.Key()

	first := createTemplate(t, e, key, templateBody("order_update", "en_US"))
	if first.Status != "pending" || first.RejectedReason != nil || first.Header == nil || *first.Header != "Order {{1}}" ||
		strings.Join(first.Variables, ",") != "1,2" || first.Examples["2"] != "Ana" || first.Category != "utility" {
		t.Fatalf("created %+v", first)
	}
	r := e.Do(Request{Method: http.MethodPost, Path: templatesPath, Header: key, Body: templateBody("order_update", "en_US")})
	if r.Status != http.StatusConflict || r.Map(t)["code"] != "template_exists" {
		t.Fatalf("the same name and language again = %d %s", r.Status, r.Body)
	}
	arabic := createTemplate(t, e, key, templateBody("order_update", "ar"))
	named := createTemplate(t, e, key, map[string]any{"name": "welcome", "language": "en", "category": "marketing",
		"body": "Dear {{first_name}}, welcome to {{shop}}!", "examples": map[string]string{"first_name": "Ana", "shop": "Acme"}})
	if named.Header != nil || named.Footer != nil || strings.Join(named.Variables, ",") != "first_name,shop" {
		t.Fatalf("named %+v", named)
	}
	// Another organization may use the same name and language.
	theirs := createTemplate(t, e, other.Key(), templateBody("order_update", "en_US"))

	path := fmt.Sprintf("%s/%d", templatesPath, first.ID)
	r = e.Do(Request{Method: http.MethodGet, Path: path, Header: key})
	if r.Status != http.StatusOK || !strings.Contains(string(r.Body), `"name":"order_update"`) {
		t.Fatalf("GET = %d %s", r.Status, r.Body)
	}

	page, next := listTemplates(t, e, key, url.Values{"limit": {"2"}})
	if len(page) != 2 || page[0].ID != named.ID || page[1].ID != arabic.ID || next == nil {
		t.Fatalf("first page %+v %v", page, next)
	}
	page, next = listTemplates(t, e, key, url.Values{"limit": {"2"}, "cursor": {*next}})
	if len(page) != 1 || page[0].ID != first.ID || next != nil {
		t.Fatalf("second page %+v %v", page, next)
	}
	for _, tc := range []struct {
		q    url.Values
		want []int64
	}{
		{url.Values{"category": {"marketing"}}, []int64{named.ID}},
		{url.Values{"name": {"order_update"}}, []int64{arabic.ID, first.ID}},
		{url.Values{"status": {"pending"}, "category": {"utility"}}, []int64{arabic.ID, first.ID}},
		{url.Values{"status": {"approved"}}, nil},
	} {
		got, _ := listTemplates(t, e, key, tc.q)
		ids := make([]int64, len(got))
		for i, tpl := range got {
			ids[i] = tpl.ID
		}
		if len(ids) != len(tc.want) || (len(ids) > 0 && fmt.Sprint(ids) != fmt.Sprint(tc.want)) {
			t.Errorf("%s: %v, want %v", tc.q.Encode(), ids, tc.want)
		}
	}
	r = e.Do(Request{Method: http.MethodGet, Path: templatesPath + "?status=gone&category=x&limit=0&cursor=zz", Header: key})
	fields := fieldErrors(t, r)
	for _, f := range []string{"status", "category", "limit", "cursor"} {
		if len(fields[f]) == 0 {
			t.Errorf("bad list query lacks %s: %s", f, r.Body)
		}
	}

	t.Run("isolation", func(t *testing.T) {
		theirPath := fmt.Sprintf("%s/%d", templatesPath, theirs.ID)
		for _, m := range []string{http.MethodGet, http.MethodDelete} {
			// Both organizations have a template with this id; each sees its own.
			r := e.Do(Request{Method: m, Path: fmt.Sprintf("%s/%d", templatesPath, named.ID), Header: other.Key()})
			if r.Status != http.StatusNotFound {
				t.Errorf("%s another organization's template = %d %s", m, r.Status, r.Body)
			}
		}
		r := e.Do(Request{Method: http.MethodGet, Path: theirPath, Header: other.Key()})
		if r.Status != http.StatusOK || !strings.Contains(string(r.Body), fmt.Sprintf(`"id":%d`, theirs.ID)) {
			t.Errorf("their own template = %d %s", r.Status, r.Body)
		}
		got, _ := listTemplates(t, e, other.Key(), nil)
		if len(got) != 1 || got[0].ID != theirs.ID {
			t.Errorf("their list %+v", got)
		}
	})

	t.Run("scopes", func(t *testing.T) {
		readOnly := KeyHeader(e.APIKey(t, org, "messages.read"))
		sendOnly := KeyHeader(e.APIKey(t, org, "messages.send"))
		manage := KeyHeader(e.APIKey(t, org, "templates.manage"))
		lookupOnly := KeyHeader(e.APIKey(t, org, "contacts.lookup"))
		for _, k := range []map[string]string{readOnly, sendOnly} {
			for _, p := range []string{templatesPath, path} {
				if r := e.Do(Request{Method: http.MethodGet, Path: p, Header: k}); r.Status != http.StatusOK {
					t.Errorf("GET %s with a reading key = %d %s", p, r.Status, r.Body)
				}
			}
			for _, req := range []Request{
				{Method: http.MethodPost, Path: templatesPath, Header: k, Body: templateBody("x", "en")},
				{Method: http.MethodDelete, Path: path, Header: k},
			} {
				r := e.Do(req)
				if r.Status != http.StatusForbidden || r.Map(t)["code"] != "insufficient_scope" ||
					!strings.Contains(string(r.Body), "templates.manage") {
					t.Errorf("%s %s without templates.manage = %d %s", req.Method, req.Path, r.Status, r.Body)
				}
			}
		}
		if r := e.Do(Request{Method: http.MethodGet, Path: templatesPath, Header: lookupOnly}); r.Status != http.StatusForbidden {
			t.Errorf("GET with contacts.lookup only = %d %s", r.Status, r.Body)
		}
		created := createTemplate(t, e, manage, templateBody("managed", "en"))
		if r := e.Do(Request{Method: http.MethodDelete, Path: fmt.Sprintf("%s/%d", templatesPath, created.ID), Header: manage}); r.Status != http.StatusNoContent {
			t.Errorf("DELETE with templates.manage = %d %s", r.Status, r.Body)
		}
	})

	r = e.Do(Request{Method: http.MethodDelete, Path: path, Header: key})
	if r.Status != http.StatusNoContent || len(r.Body) != 0 {
		t.Fatalf("DELETE = %d %s", r.Status, r.Body)
	}
	for _, m := range []string{http.MethodGet, http.MethodDelete} {
		if r = e.Do(Request{Method: m, Path: path, Header: key}); r.Status != http.StatusNotFound {
			t.Errorf("%s after DELETE = %d %s", m, r.Status, r.Body)
		}
	}
	if r = e.Do(Request{Method: http.MethodGet, Path: templatesPath + "/abc", Header: key}); r.Status != http.StatusNotFound {
		t.Errorf("GET a malformed id = %d %s", r.Status, r.Body)
	}
}
