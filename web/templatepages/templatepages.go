package templatepages

import (
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/bizmsg/platform/platform/page"
	"github.com/bizmsg/platform/platform/templates"
	"github.com/bizmsg/platform/web"
)

// The templates pages manage the organization's message templates through
// templates.Service, the service of the Tenant API's /templates routes
// (docs/api.md, §Templates). Every member may read the templates, their
// review status and a rejection's reason; creating and deleting are for
// owners and admins, as managing webhook endpoints is.
//
// The create form has one example field per variable, named
// examples.<variable> (the service's field names, so its errors land on
// them). With script, app.js adds and removes those fields as the header
// and body are typed and shows the rendered text live; without it, the
// service's "examples.<variable> is required" errors bring the missing
// fields onto the form after the first submit.

// templateFilterFields are the list's filters: the query parameters of
// GET /api/v1/templates, with the same names.
var templateFilterFields = []string{"status", "category", "name"}

// examplesPrefix starts the names of the form's example fields and the
// service's field errors about them.
const examplesPrefix = "examples."

// templateNotice is the success message of a template form's redirect
// (?ok=<code>): fixed texts, so the URL carries no content of its own.
func templateNotice(code string) string {
	switch code {
	case "template_created":
		return "Template submitted: the network reviews it, which usually takes a few seconds. Reload this page to see its verdict."
	case "template_deleted":
		return "Template deleted. Messages already sent with it keep their content."
	}
	return ""
}

// templateTone is the badge class of a template status.
func templateTone(s templates.Status) string {
	switch s {
	case templates.StatusApproved:
		return "ok"
	case templates.StatusRejected, templates.StatusDisabled:
		return "bad"
	}
	return "warn"
}

// templateView is a template as the pages show it.
type templateView struct {
	templates.Template
	// Tone is the status badge's class.
	Tone string
	// Sample is the text the template renders with its examples ("" if
	// it cannot be rendered).
	Sample string
}

func viewTemplate(t templates.Template) templateView {
	v := templateView{Template: t, Tone: templateTone(t.Status)}
	if s, err := templates.Render(t, t.Examples); err == nil {
		v.Sample = s
	}
	return v
}

// templatesData is the templates list's data.
type templatesData struct {
	Templates  []templateView
	Statuses   []string
	Categories []string
	web.Pager
}

// templatesPage lists the organization's templates, filtered and paged as
// the API's.
func (d *Pages) templatesPage(c *gin.Context) {
	s := web.SessionOf(c)
	form, q := web.ReadFilters(c, templateFilterFields)
	pd := web.PageData{Title: "Templates", Nav: "templates", Form: form, Notice: templateNotice(c.Query("ok"))}
	cursor := c.Query("cursor")
	list, err := d.cfg.Templates.List(c.Request.Context(), s.Principal.Tenant, templates.ListQuery{
		Status: q.Get("status"), Category: q.Get("category"), Name: q.Get("name"),
		Limit: strconv.Itoa(page.DefaultLimit), Cursor: cursor})
	status, ok := d.FormStatus(c, err, &pd)
	if !ok {
		return
	}
	data := templatesData{Categories: templates.Categories()}
	for _, st := range templates.Statuses() {
		data.Statuses = append(data.Statuses, string(st))
	}
	for _, t := range list.Items {
		data.Templates = append(data.Templates, viewTemplate(t))
	}
	data.Pager = web.NewPager("/templates", q, cursor, list.NextCursor, "")
	pd.Data = data
	d.RenderStatus(c, status, "templates_list", pd)
}

// exampleField is an example field of the create form.
type exampleField struct {
	// Variable is the variable's name ("1", "first_name").
	Variable string
}

// Name is the field's name, as the service names it in errors.
func (f exampleField) Name() string { return examplesPrefix + f.Variable }

// ID is the field's element id.
func (f exampleField) ID() string { return "ex-" + f.Variable }

// Label is the field's label.
func (f exampleField) Label() string { return "Example for {{" + f.Variable + "}}" }

// templateFormData is the create form's data.
type templateFormData struct {
	Categories []string
	// Examples are the example fields to show: those posted, and those
	// the service said are missing.
	Examples []exampleField
	// Limits of the texts, for the fields' maxlength.
	MaxName, MaxHeader, MaxBody, MaxFooter, MaxValue int
	// Rendered is the service's rendering of the form's template with its
	// examples, after "Check and preview" ("" otherwise).
	Rendered string
}

// newTemplatePage is the create form with its live preview.
func (d *Pages) newTemplatePage(c *gin.Context) {
	if _, ok := d.RequireAdmin(c, "create templates"); !ok {
		return
	}
	d.renderTemplateForm(c, http.StatusOK, web.PageData{}, nil, "")
}

// renderTemplateForm renders the create form with an example field for
// each of variables, and the text the template renders when the form was
// checked.
func (d *Pages) renderTemplateForm(c *gin.Context, status int, pd web.PageData, variables []string, rendered string) {
	data := templateFormData{
		Categories: templates.Categories(),
		MaxName:    templates.MaxNameLength, MaxHeader: templates.MaxHeaderLength,
		MaxBody: templates.MaxBodyLength, MaxFooter: templates.MaxFooterLength, MaxValue: templates.MaxValueLength,
		Rendered: rendered,
	}
	for _, v := range variables {
		data.Examples = append(data.Examples, exampleField{Variable: v})
	}
	pd.Title, pd.Nav, pd.Data = "New template", "templates", data
	d.RenderStatus(c, status, "template_new", pd)
}

// createTemplate submits the form to the template service (the same
// validation as POST /api/v1/templates); the new template waits for the
// network's review on its own page. With "Check and preview" (the preview
// field) it only checks the template and shows the text it renders, which
// is the preview of a browser without script.
func (d *Pages) createTemplate(c *gin.Context) {
	s, ok := d.RequireAdmin(c, "create templates")
	if !ok {
		return
	}
	if err := c.Request.ParseForm(); err != nil {
		d.Internal(c, err)
		return
	}
	form := map[string]string{}
	for _, f := range []string{"name", "language", "category", "header", "body", "footer"} {
		form[f] = c.PostForm(f)
	}
	// An empty example field is an example not given.
	examples := map[string]string{}
	for key, values := range c.Request.PostForm {
		name, isExample := strings.CutPrefix(key, examplesPrefix)
		if !isExample || name == "" || len(values) == 0 {
			continue
		}
		form[key] = values[0]
		if strings.TrimSpace(values[0]) != "" {
			examples[name] = values[0]
		}
	}
	field := func(f string) *string { v := form[f]; return &v }
	in := templates.Input{Name: field("name"), Language: field("language"), Category: field("category"),
		Header: field("header"), Body: field("body"), Footer: field("footer"), Examples: examples}
	pd := web.PageData{Form: form}
	var rendered string
	var err error
	if c.PostForm("preview") != "" {
		if rendered, err = d.cfg.Templates.Preview(in); err == nil {
			pd.Notice = "The template passes every check. Below is the message with your examples; submit it for review when it reads well."
		}
	} else {
		var tpl templates.Template
		if tpl, err = d.cfg.Templates.Create(c.Request.Context(), s.Principal.Tenant, in); err == nil {
			web.Redirect(c, "/templates/"+strconv.FormatInt(tpl.ID, 10)+"?ok=template_created")
			return
		}
	}
	status, ok := d.FormStatus(c, err, &pd)
	if !ok {
		return
	}
	d.renderTemplateForm(c, status, pd, exampleVariables(form, pd.Fields), rendered)
}

// exampleVariables are the variables whose example fields the form shows
// again: those posted, and those the service's errors name; numbers in
// order first, then names alphabetically (app.js puts them in the order
// of the text).
func exampleVariables(form map[string]string, fields map[string][]string) []string {
	var out []string
	add := func(key string) {
		if name, ok := strings.CutPrefix(key, examplesPrefix); ok && name != "" && !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	for key := range form {
		add(key)
	}
	for key := range fields {
		add(key)
	}
	slices.SortFunc(out, func(a, b string) int {
		na, errA := strconv.Atoi(a)
		nb, errB := strconv.Atoi(b)
		switch {
		case errA == nil && errB == nil:
			return na - nb
		case errA == nil:
			return -1
		case errB == nil:
			return 1
		}
		return strings.Compare(a, b)
	})
	return out
}

// templatePage is one template: its texts, examples and the text they
// render, its review status and a rejection's reason.
func (d *Pages) templatePage(c *gin.Context) {
	s := web.SessionOf(c)
	id, ok := d.PathID(c, "template")
	if !ok {
		return
	}
	t, ok := d.template(c, s, id)
	if !ok {
		return
	}
	d.Render(c, "template_detail", web.PageData{Title: "Template " + t.Name, Nav: "templates",
		Notice: templateNotice(c.Query("ok")), Data: viewTemplate(t)})
}

// template reads the organization's template id; false when it could
// not, the error page rendered.
func (d *Pages) template(c *gin.Context, s *web.Session, id int64) (templates.Template, bool) {
	t, err := d.cfg.Templates.Get(c.Request.Context(), s.Principal.Tenant, id)
	if err != nil {
		d.Internal(c, err)
		return templates.Template{}, false
	}
	return t, true
}

// deleteTemplatePage asks for confirmation before deleting a template.
func (d *Pages) deleteTemplatePage(c *gin.Context) {
	s, id, ok := d.AdminAction(c, "template", "delete templates")
	if !ok {
		return
	}
	t, ok := d.template(c, s, id)
	if !ok {
		return
	}
	d.Render(c, "template_delete", web.PageData{Title: "Delete template", Nav: "templates", Data: t})
}

// deleteTemplate deletes a template; messages sent with it keep their
// content.
func (d *Pages) deleteTemplate(c *gin.Context) {
	s, id, ok := d.AdminAction(c, "template", "delete templates")
	if !ok {
		return
	}
	if err := d.cfg.Templates.Delete(c.Request.Context(), s.Principal.Tenant, id); err != nil {
		d.Internal(c, err)
		return
	}
	web.Redirect(c, "/templates?ok=template_deleted")
}
