package integration

import (
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"
)

// templateFrom is the path of the template page a create form's redirect
// names (with its notice code cut off).
func templateFrom(t *testing.T, r *webResponse) string {
	t.Helper()
	m := regexp.MustCompile(`^(/templates/\d+)\?ok=template_created$`).FindStringSubmatch(r.Header.Get("Location"))
	if r.Status != http.StatusSeeOther || m == nil {
		t.Fatalf("create template = %d to %q; body: %.800s", r.Status, r.Header.Get("Location"), r.Body)
	}
	return m[1]
}

// The dashboard's template pages over HTTP: the service's 422s and 409 on
// the create form with the values kept, the example fields the service
// asks for brought onto the form and the server's preview (no script
// needed), the network's
// verdicts (approved with the rendered example, rejected with its reason),
// filters, delete after confirmation, another organization's template 404
// everywhere, and members reading only.
func TestDashboardTemplates(t *testing.T) {
	t.Parallel()
	e := Start(t, Options{Workers: true})
	org, other := e.Register(t), e.Register(t)
	w := newWebClient(t, e)
	wantPage(t, w.login(org.OwnerEmail, org.OwnerPassword), http.StatusSeeOther)
	token := w.csrf("/templates/new")
	wantPage(t, w.get("/templates"), http.StatusOK, `href="/templates" aria-current="page"`, "No templates yet", `href="/templates/new"`)
	wantPage(t, w.get("/templates/new"), http.StatusOK, `action="/templates"`, `id="preview" hidden`, "No variables yet")

	form := func(kv ...string) url.Values {
		v := url.Values{"csrf_token": {token}, "name": {"order_shipped"}, "language": {"en_US"}, "category": {"utility"},
			"header": {"Order {{1}}"}, "body": {"Hi {{2}}, your order {{1}} has shipped."}, "footer": {"Acme"}}
		for i := 0; i < len(kv); i += 2 {
			v.Set(kv[i], kv[i+1])
		}
		return v
	}
	wantPage(t, w.post("/templates", url.Values{"name": {"x"}}), http.StatusForbidden, "Form expired")

	// Without script: the first submit brings the example fields the
	// service asks for, with the other errors on their fields.
	r := w.post("/templates", form("name", "Order Shipped", "category", "promo"))
	wantPage(t, r, http.StatusUnprocessableEntity, "Please correct the fields", `id="t-name-err"`, "lowercase letters",
		`id="t-category-err"`, "must be one of marketing, utility, authentication",
		`id="ex-1" name="examples.1"`, `id="ex-2" name="examples.2"`, `id="ex-1-err"`, "give an example value for {{1}}",
		`value="Order Shipped"`, ">Hi {{2}}, your order {{1}} has shipped.</textarea>")
	if strings.Index(r.Body, `id="ex-1"`) > strings.Index(r.Body, `id="ex-2"`) {
		t.Fatal("example fields out of order")
	}
	wantPage(t, w.post("/templates", form("examples.1", "A-1042", "examples.2", "Ana", "examples.3", "stale", "footer", "By {{1}}")),
		http.StatusUnprocessableEntity, `id="t-footer-err"`, "may not have variables", `id="ex-3-err"`, "is not a variable",
		`id="ex-1" name="examples.1" autocomplete="off" required maxlength="1024" value="A-1042"`)
	// "Check and preview" checks with the service's rules and renders the
	// text on the server (the preview without script), creating nothing.
	wantPage(t, w.post("/templates", form("examples.1", "A-1042", "preview", "1")), http.StatusUnprocessableEntity,
		`id="ex-2-err"`, `id="preview" hidden`)
	wantPage(t, w.post("/templates", form("examples.1", "A-1042", "examples.2", "Ana", "preview", "1")), http.StatusOK,
		"passes every check", `<section class="card preview-card" aria-labelledby="preview-h" id="preview">`,
		`id="preview-text">Order A-1042

Hi Ana, your order A-1042 has shipped.

Acme</div>`, `value="Ana"`)
	wantPage(t, w.get("/templates"), http.StatusOK, "No templates yet")
	// An emptied example field is an example not given.
	wantPage(t, w.post("/templates", form("examples.1", "A-1042", "examples.2", "Ana", "examples.3", "")), http.StatusSeeOther)

	// Approved by the built-in network within seconds.
	path := templateFrom(t, w.post("/templates", form("name", "order_shipped_2", "examples.1", "A-1042", "examples.2", "Ana")))
	wantPage(t, w.get(path+"?ok=template_created"), http.StatusOK, "Template submitted", "order_shipped_2")
	waitTemplate := func(path, status string) *webResponse {
		t.Helper()
		var page *webResponse
		poll(t, 20*time.Second, func() (bool, string) {
			page = w.get(path)
			return strings.Contains(page.Body, `data-status="`+status+`"`), fmt.Sprintf("%s is not %s: %.300s", path, status, page.Body)
		})
		return page
	}
	wantPage(t, waitTemplate(path, "approved"), http.StatusOK, `id="template-status">approved`,
		`id="template-sample">Order A-1042

Hi Ana, your order A-1042 has shipped.

Acme</div>`)

	// The same name and language again: the service's 409 on the form.
	wantPage(t, w.post("/templates", form("name", "order_shipped_2", "examples.1", "x", "examples.2", "y")),
		http.StatusConflict, "already has a template named order_shipped_2 in en_US", `value="order_shipped_2"`)

	// Rejected, with the network's reason.
	rejected := templateFrom(t, w.post("/templates", url.Values{"csrf_token": {token}, "name": {"login_code"}, "language": {"en"},
		"category": {"authentication"}, "body": {"{{1}} is your code."}, "examples.1": {"123456"}}))
	wantPage(t, waitTemplate(rejected, "rejected"), http.StatusOK, `id="rejected-reason"`, "starts with a variable")
	list := w.get("/templates")
	wantPage(t, list, http.StatusOK, `class="template-link">login_code`, `class="rejected-reason">The body starts with a variable`,
		`class="template-link">order_shipped_2`)
	if page := w.get("/templates?status=rejected"); strings.Contains(page.Body, "order_shipped_2") || !strings.Contains(page.Body, "login_code") {
		t.Fatalf("status filter: %.2000s", page.Body)
	}
	wantPage(t, w.get("/templates?status=lost"), http.StatusUnprocessableEntity, `id="f-status-err"`)

	// Another organization's template is 404 on every page and action,
	// and stays. (Ids are per organization: theirs is one ours lacks.)
	var ours int64
	if _, err := fmt.Sscanf(rejected, "/templates/%d", &ours); err != nil {
		t.Fatal(err)
	}
	var theirs struct {
		Data struct {
			ID int64 `json:"id"`
		} `json:"data"`
	}
	for i := 0; theirs.Data.ID <= ours; i++ {
		r := e.Do(Request{Method: http.MethodPost, Path: "/api/v1/templates", Header: other.Key(), Body: map[string]any{
			"name": fmt.Sprintf("theirs_%d", i), "language": "en", "category": "utility", "body": "Their text {{1}} here.", "examples": map[string]string{"1": "x"}}})
		if r.Status != http.StatusCreated {
			t.Fatalf("their template = %d %s", r.Status, r.Body)
		}
		r.JSON(t, &theirs)
	}
	them := fmt.Sprintf("/templates/%d", theirs.Data.ID)
	if strings.Contains(w.get("/templates").Body, "theirs_") {
		t.Fatal("our list shows their templates")
	}
	for _, r := range []*webResponse{w.get(them), w.get(them + "/delete"), w.post(them+"/delete", url.Values{"csrf_token": {token}}),
		w.get("/templates/abc"), w.get("/templates/0")} {
		wantPage(t, r, http.StatusNotFound, "Not found")
	}
	if r := e.Do(Request{Method: http.MethodGet, Path: "/api/v1" + them, Header: other.Key()}); r.Status != http.StatusOK {
		t.Fatalf("their template after our attempts: %d %s", r.Status, r.Body)
	}

	// A member reads, and creates or deletes nothing.
	email := uniqueEmail("member")
	wantRedirect(t, w.post("/members", url.Values{"csrf_token": {token}, "name": {"Mia Member"}, "email": {email},
		"role": {"member"}, "password": {"initial password 1"}}), "/members?ok=member_added")
	member := newWebClient(t, e)
	wantPage(t, member.login(email, "initial password 1"), http.StatusSeeOther)
	page := member.get(path)
	wantPage(t, page, http.StatusOK, "order_shipped_2")
	if strings.Contains(page.Body, "delete-template") || strings.Contains(member.get("/templates").Body, `href="/templates/new"`) {
		t.Fatal("a member is offered to create or delete")
	}
	mToken := member.csrf("/templates")
	wantPage(t, member.get("/templates/new"), http.StatusForbidden, "Only owners and admins")
	wantPage(t, member.post("/templates", form("csrf_token", mToken)), http.StatusForbidden, "Only owners and admins")
	wantPage(t, member.post(path+"/delete", url.Values{"csrf_token": {mToken}}), http.StatusForbidden, "Only owners and admins")

	// Deleted after confirmation.
	wantPage(t, w.get(path+"/delete"), http.StatusOK, "Delete the template", `id="confirm-delete"`)
	wantRedirect(t, w.post(path+"/delete", url.Values{"csrf_token": {token}}), "/templates?ok=template_deleted")
	wantPage(t, w.get("/templates?ok=template_deleted"), http.StatusOK, "Template deleted")
	wantPage(t, w.get(path), http.StatusNotFound, "Not found")
	wantPage(t, w.post(path+"/delete", url.Values{"csrf_token": {token}}), http.StatusNotFound, "Not found")
}
