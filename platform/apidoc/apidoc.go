// Package apidoc serves the API's own description: the OpenAPI document
// (docs/openapi.yaml, embedded in the binary) as YAML and as JSON, and a
// human-readable reference page that renders it in the browser.
//
//	GET /api/v1/openapi.yaml                 the document, byte for byte (application/yaml)
//	GET /api/v1/openapi.json                 the same document as JSON, converted once in New
//	GET /docs                                the reference page (HTML)
//	GET /docs/reference.js                   the page's script: starts the renderer
//	GET /docs/swagger-ui-5.35.0/:file        the vendored renderer and its licence files
//
// All of them are public (no API key, no session) and carry a strong ETag;
// a request whose If-None-Match names it gets 304 with no body. The
// document, the page and its script are "Cache-Control: no-cache" (a new
// binary may change them, and revalidating costs a 304); the renderer's
// files have the version in their path and are cached for a year,
// immutable.
//
// The renderer is Swagger UI, copied unchanged from the npm package
// swagger-ui-dist at SwaggerUIVersion into the directory swagger-ui-<version>
// beside this file, with its licence. It is served from this binary only:
// the page and its files carry ContentSecurityPolicy, which lets the page
// load scripts, styles and data from its own origin and nothing else. To
// update it: npm pack swagger-ui-dist@<version>, copy the same files into a
// directory named for the new version, change SwaggerUIVersion and the
// embed directive, and run the integration tests (the browser test renders
// the page and fails on any request off the server or any policy violation).
package apidoc

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"path"
	"strings"

	"github.com/gin-gonic/gin"
	"github.com/oasdiff/yaml"

	"github.com/bizmsg/platform/platform/apperr"
	"github.com/bizmsg/platform/platform/httpx"
)

// Paths the package serves.
const (
	// YAMLPath serves the OpenAPI document as it is in docs/openapi.yaml.
	YAMLPath = "/api/v1/openapi.yaml"
	// JSONPath serves the same document as JSON.
	JSONPath = "/api/v1/openapi.json"
	// PagePath is the reference page; its script and the renderer's files
	// are under it.
	PagePath = "/docs"
)

// SwaggerUIVersion is the vendored Swagger UI (npm swagger-ui-dist).
const SwaggerUIVersion = "5.35.0"

// ContentSecurityPolicy is the policy of the reference page and its files:
// scripts, styles, images and fetches (the document, and Swagger UI's "Try
// it out") from the page's own origin only, data: images (the renderer's
// icons), no inline script or style, no plugins, forms, framing or base URL.
const ContentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; form-action 'none'; frame-ancestors 'none'; base-uri 'none'"

// Cache-Control values: revalidate with the ETag, or keep for a year.
const (
	cacheRevalidate = "no-cache"
	cacheImmutable  = "public, max-age=31536000, immutable"
)

// swaggerUIDir is the vendored renderer's directory, and its path under
// PagePath.
const swaggerUIDir = "swagger-ui-" + SwaggerUIVersion

//go:embed page.html reference.js swagger-ui-5.35.0
var files embed.FS

// file is one response body with its headers.
type file struct {
	body         []byte
	contentType  string
	etag         string
	cacheControl string
}

// newFile returns body with a strong ETag of its content.
func newFile(body []byte, contentType, cacheControl string) file {
	sum := sha256.Sum256(body)
	return file{body: body, contentType: contentType, etag: `"` + hex.EncodeToString(sum[:16]) + `"`, cacheControl: cacheControl}
}

// Docs serves the OpenAPI document and the reference page. Everything it
// serves is built in New and read-only afterwards.
type Docs struct {
	yaml, json file
	page       file
	script     file
	// vendored are the renderer's files by name.
	vendored map[string]file
}

// Config configures the Docs.
type Config struct {
	// Document is the OpenAPI document in YAML (the bytes of
	// docs/openapi.yaml). Required.
	Document []byte
}

// New builds the handlers for cfg.Document: it converts the document to
// JSON once and renders the reference page. It fails when the document is
// missing, is not YAML or has no "openapi" version.
func New(cfg Config) (*Docs, error) {
	document := cfg.Document
	if len(document) == 0 {
		return nil, errors.New("apidoc: Config.Document is required")
	}
	js, err := toJSON(document)
	if err != nil {
		return nil, err
	}
	d := &Docs{
		yaml:     newFile(bytes.Clone(document), "application/yaml", cacheRevalidate),
		json:     newFile(js, "application/json", cacheRevalidate),
		vendored: map[string]file{},
	}
	if d.page, err = renderPage(); err != nil {
		return nil, err
	}
	script, err := files.ReadFile("reference.js")
	if err != nil {
		return nil, err
	}
	d.script = newFile(script, "text/javascript; charset=utf-8", cacheRevalidate)
	entries, err := fs.ReadDir(files, swaggerUIDir)
	if err != nil {
		return nil, fmt.Errorf("apidoc: the vendored Swagger UI %s is missing: %w", SwaggerUIVersion, err)
	}
	for _, e := range entries {
		b, err := files.ReadFile(swaggerUIDir + "/" + e.Name())
		if err != nil {
			return nil, err
		}
		d.vendored[e.Name()] = newFile(b, contentType(e.Name()), cacheImmutable)
	}
	for _, name := range []string{"swagger-ui-bundle.js", "swagger-ui.css", "LICENSE"} {
		if _, ok := d.vendored[name]; !ok {
			return nil, fmt.Errorf("apidoc: the vendored Swagger UI %s has no %s", SwaggerUIVersion, name)
		}
	}
	return d, nil
}

// toJSON converts the YAML document to JSON the way kin-openapi's loader
// reads it (YAML 1.1 timestamps stay strings), so the JSON is the document
// the conformance tests hold the server to.
func toJSON(document []byte) ([]byte, error) {
	var raw json.RawMessage
	if _, err := yaml.Unmarshal(document, &raw, yaml.DecodeOpts{DisableTimestamps: true}); err != nil {
		return nil, fmt.Errorf("apidoc: the OpenAPI document is not YAML: %w", err)
	}
	var head struct {
		OpenAPI string `json:"openapi"`
	}
	if err := json.Unmarshal(raw, &head); err != nil || head.OpenAPI == "" {
		return nil, errors.New("apidoc: the document has no openapi version")
	}
	return raw, nil
}

// pageTemplate is the reference page; its paths come from the constants.
var pageTemplate = template.Must(template.ParseFS(files, "page.html"))

// renderPage renders the reference page once.
func renderPage() (file, error) {
	var b bytes.Buffer
	err := pageTemplate.Execute(&b, struct{ Assets, Script, YAML, JSON string }{
		Assets: PagePath + "/" + swaggerUIDir,
		Script: PagePath + "/reference.js",
		YAML:   YAMLPath,
		JSON:   JSONPath,
	})
	if err != nil {
		return file{}, fmt.Errorf("apidoc: render the reference page: %w", err)
	}
	return newFile(b.Bytes(), "text/html; charset=utf-8", cacheRevalidate), nil
}

// contentType is the Content-Type of a vendored file.
func contentType(name string) string {
	switch path.Ext(name) {
	case ".js":
		return "text/javascript; charset=utf-8"
	case ".css":
		return "text/css; charset=utf-8"
	case ".json":
		return "application/json"
	default: // LICENSE, NOTICE, *.LICENSE.txt
		return "text/plain; charset=utf-8"
	}
}

// Mount registers the document's and the page's routes on r. They are
// outside the APIs' authenticated groups: nothing here needs a credential.
func (d *Docs) Mount(r gin.IRouter) {
	r.GET(YAMLPath, serve(d.yaml))
	r.GET(JSONPath, serve(d.json))
	g := r.Group(PagePath, pageHeaders)
	g.GET("", serve(d.page))
	g.GET("/reference.js", serve(d.script))
	g.GET("/"+swaggerUIDir+"/:file", d.serveVendored)
}

// pageHeaders sets the security headers of the page and its files.
func pageHeaders(c *gin.Context) {
	h := c.Writer.Header()
	h.Set("Content-Security-Policy", ContentSecurityPolicy)
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	c.Next()
}

// serveVendored serves one of the renderer's files by name; any other name
// is 404.
func (d *Docs) serveVendored(c *gin.Context) {
	f, ok := d.vendored[c.Param("file")]
	if !ok {
		httpx.Fail(c, apperr.NotFound("file"))
		return
	}
	serve(f)(c)
}

// serve answers with f: 304 when If-None-Match names its ETag, else 200
// with the body.
func serve(f file) gin.HandlerFunc {
	return func(c *gin.Context) {
		h := c.Writer.Header()
		h.Set("ETag", f.etag)
		h.Set("Cache-Control", f.cacheControl)
		h.Set("X-Content-Type-Options", "nosniff")
		if matchesETag(c.Request.Header.Values("If-None-Match"), f.etag) {
			c.Status(http.StatusNotModified)
			return
		}
		c.Data(http.StatusOK, f.contentType, f.body)
	}
}

// matchesETag reports whether If-None-Match header values name etag: "*",
// or a listed tag equal to it under the weak comparison RFC 9110 asks of
// If-None-Match (a W/ prefix is ignored).
func matchesETag(values []string, etag string) bool {
	for _, v := range values {
		for t := range strings.SplitSeq(v, ",") {
			t = strings.TrimSpace(t)
			if t == "*" || strings.TrimPrefix(t, "W/") == etag {
				return true
			}
		}
	}
	return false
}
