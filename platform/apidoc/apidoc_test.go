package apidoc_test

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/bizmsg/platform/docs"
	"github.com/bizmsg/platform/platform/apidoc"
	"github.com/bizmsg/platform/platform/httpx"
)

// serve mounts New(document) on the shared engine and returns a client for
// it.
// response is a recorded answer (its body in memory: nothing to close).
type response struct {
	StatusCode int
	Header     http.Header
	Body       *bytes.Buffer
}

func serve(t *testing.T, document []byte) func(path string, header map[string]string) *response {
	t.Helper()
	d, err := apidoc.New(apidoc.Config{Document: document})
	if err != nil {
		t.Fatal(err)
	}
	e := httpx.NewEngine(httpx.Config{Logger: slog.New(slog.DiscardHandler)})
	d.Mount(e)
	return func(path string, header map[string]string) *response {
		t.Helper()
		req := httptest.NewRequest(http.MethodGet, path, nil)
		for k, v := range header {
			req.Header.Set(k, v)
		}
		w := httptest.NewRecorder()
		e.ServeHTTP(w, req)
		return &response{StatusCode: w.Code, Header: w.Header(), Body: w.Body}
	}
}

func body(t *testing.T, r *response) string {
	t.Helper()
	return r.Body.String()
}

// The JSON form is the YAML converted as kin-openapi reads it: a
// date-shaped scalar stays the string it is, not a timestamp.
func TestJSONKeepsScalarsAsWritten(t *testing.T) {
	t.Parallel()
	get := serve(t, []byte("openapi: 3.1.0\ninfo: {title: t, version: 2026-11-22}\npaths: {}\n"))
	r := get(apidoc.JSONPath, nil)
	if r.StatusCode != http.StatusOK || r.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("%d %s", r.StatusCode, r.Header.Get("Content-Type"))
	}
	var doc struct {
		Info struct {
			Version string `json:"version"`
		} `json:"info"`
	}
	if err := json.Unmarshal([]byte(body(t, r)), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Info.Version != "2026-11-22" {
		t.Fatalf("info.version = %q, want the date as written", doc.Info.Version)
	}
}

func TestNewRefusesWhatIsNotAnOpenAPIDocument(t *testing.T) {
	t.Parallel()
	for _, doc := range []string{"", "a: [", "- 1\n- 2\n", "info: {title: t}\n"} {
		if _, err := apidoc.New(apidoc.Config{Document: []byte(doc)}); err == nil {
			t.Errorf("New(%q): no error", doc)
		}
	}
}

// Every file has a strong ETag; If-None-Match naming it (weakly, in a
// list, or "*") answers 304 without a body; another tag gets the body.
func TestConditionalRequests(t *testing.T) {
	t.Parallel()
	get := serve(t, docs.OpenAPIYAML())
	paths := []string{
		apidoc.YAMLPath, apidoc.JSONPath, apidoc.PagePath, apidoc.PagePath + "/reference.js",
		apidoc.PagePath + "/swagger-ui-" + apidoc.SwaggerUIVersion + "/swagger-ui-bundle.js",
	}
	for _, p := range paths {
		r := get(p, nil)
		etag := r.Header.Get("ETag")
		if r.StatusCode != http.StatusOK || !strings.HasPrefix(etag, `"`) || len(etag) < 10 || body(t, r) == "" {
			t.Fatalf("GET %s: %d, ETag %q", p, r.StatusCode, etag)
		}
		if r.Header.Get("X-Content-Type-Options") != "nosniff" || r.Header.Get("Cache-Control") == "" {
			t.Errorf("GET %s: headers %v", p, r.Header)
		}
		for _, inm := range []string{etag, "W/" + etag, `"other", ` + etag, "*"} {
			r := get(p, map[string]string{"If-None-Match": inm})
			if r.StatusCode != http.StatusNotModified || body(t, r) != "" || r.Header.Get("ETag") != etag {
				t.Errorf("GET %s If-None-Match %s: %d, ETag %q", p, inm, r.StatusCode, r.Header.Get("ETag"))
			}
		}
		if r := get(p, map[string]string{"If-None-Match": `"other"`}); r.StatusCode != http.StatusOK {
			t.Errorf("GET %s If-None-Match another tag: %d", p, r.StatusCode)
		}
	}
	if a, b := get(apidoc.YAMLPath, nil).Header.Get("ETag"), get(apidoc.JSONPath, nil).Header.Get("ETag"); a == b {
		t.Errorf("the YAML and the JSON share the ETag %s", a)
	}
}

// The page and its files carry the strict policy; the renderer's files are
// cached for good (their path has the version), the rest revalidated.
func TestPageHeaders(t *testing.T) {
	t.Parallel()
	get := serve(t, docs.OpenAPIYAML())
	vendored := apidoc.PagePath + "/swagger-ui-" + apidoc.SwaggerUIVersion + "/"
	for p, cache := range map[string]string{
		apidoc.PagePath:                   "no-cache",
		apidoc.PagePath + "/reference.js": "no-cache",
		vendored + "swagger-ui-bundle.js": "public, max-age=31536000, immutable",
		vendored + "swagger-ui.css":       "public, max-age=31536000, immutable",
		vendored + "LICENSE":              "public, max-age=31536000, immutable",
		apidoc.YAMLPath:                   "no-cache",
		apidoc.JSONPath:                   "no-cache",
	} {
		r := get(p, nil)
		if r.StatusCode != http.StatusOK || r.Header.Get("Cache-Control") != cache {
			t.Errorf("GET %s: %d, Cache-Control %q, want %q", p, r.StatusCode, r.Header.Get("Cache-Control"), cache)
		}
		onPage := strings.HasPrefix(p, apidoc.PagePath)
		if csp := r.Header.Get("Content-Security-Policy"); onPage != (csp == apidoc.ContentSecurityPolicy) {
			t.Errorf("GET %s: Content-Security-Policy %q", p, csp)
		}
	}
	page := body(t, get(apidoc.PagePath, nil))
	for _, want := range []string{vendored + "swagger-ui-bundle.js", vendored + "swagger-ui.css", apidoc.PagePath + "/reference.js", apidoc.JSONPath} {
		if !strings.Contains(page, want) {
			t.Errorf("the page does not name %s:\n%s", want, page)
		}
	}
	if strings.Contains(page, "<script>") || strings.Contains(page, "style=") {
		t.Errorf("the page has inline script or style, which its policy refuses:\n%s", page)
	}
}

// An unknown file of the renderer is the API's 404 envelope.
func TestUnknownVendoredFile(t *testing.T) {
	t.Parallel()
	get := serve(t, docs.OpenAPIYAML())
	for _, name := range []string{"nope.js", "..%2fpage.html", "swagger-ui.css.map"} {
		r := get(apidoc.PagePath+"/swagger-ui-"+apidoc.SwaggerUIVersion+"/"+name, nil)
		var e struct{ Code string }
		if err := json.Unmarshal([]byte(body(t, r)), &e); r.StatusCode != http.StatusNotFound || err != nil || e.Code != "not_found" {
			t.Errorf("GET %s: %d %q (%v)", name, r.StatusCode, e.Code, err)
		}
	}
}

// The vendored package is the version the constant (and so the URLs) name.
func TestVendoredVersion(t *testing.T) {
	t.Parallel()
	get := serve(t, docs.OpenAPIYAML())
	r := get(apidoc.PagePath+"/swagger-ui-"+apidoc.SwaggerUIVersion+"/package.json", nil)
	var pkg struct{ Name, Version, License string }
	if err := json.Unmarshal([]byte(body(t, r)), &pkg); err != nil {
		t.Fatal(err)
	}
	if pkg.Name != "swagger-ui-dist" || pkg.Version != apidoc.SwaggerUIVersion || pkg.License != "Apache-2.0" {
		t.Fatalf("vendored package %+v, want swagger-ui-dist %s", pkg, apidoc.SwaggerUIVersion)
	}
}
