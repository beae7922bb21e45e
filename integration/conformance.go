package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"sync"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
)

// OpenAPIPath is the API document the server is held to, relative to this
// package's directory (where go test runs).
var OpenAPIPath = filepath.Join("..", "docs", "openapi.yaml")

// contract is docs/openapi.yaml loaded, validated and routed: what every
// response of the integration tests is checked against.
type contract struct {
	doc    *openapi3.T
	router routers.Router
	// errorSchema is components.schemas.Error, for error responses of
	// paths the document does not have (404 not_found, 405).
	errorSchema *openapi3.Schema
}

// loadedContract loads the document once per test binary; the router and
// the parsed document are read-only afterwards.
var loadedContract = sync.OnceValues(func() (*contract, error) {
	return loadContract(context.Background(), OpenAPIPath)
})

// loadContract loads and validates the document at path and builds its
// router.
func loadContract(ctx context.Context, path string) (*contract, error) {
	loader := openapi3.NewLoader()
	loader.Context = ctx
	doc, err := loader.LoadFromFile(path)
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", path, err)
	}
	if err := doc.Validate(ctx); err != nil {
		return nil, fmt.Errorf("validate %s: %w", path, err)
	}
	router, err := gorillamux.NewRouter(doc)
	if err != nil {
		return nil, fmt.Errorf("route %s: %w", path, err)
	}
	ref := doc.Components.Schemas["Error"]
	if ref == nil || ref.Value == nil {
		return nil, fmt.Errorf("%s: components.schemas.Error is missing", path)
	}
	return &contract{doc: doc, router: router, errorSchema: ref.Value}, nil
}

// validationOptions returns the options of one validation: every status a
// response has must be documented for its operation (IncludeResponseStatus);
// authentication is the server's business, not the document's.
func validationOptions() *openapi3filter.Options {
	return &openapi3filter.Options{
		AuthenticationFunc:    openapi3filter.NoopAuthenticationFunc,
		IncludeResponseStatus: true,
		MultiError:            true,
	}
}

// maxConformanceError bounds a reported schema error (they quote schemas and
// values).
const maxConformanceError = 4000

// checkConformance holds one finished exchange to docs/openapi.yaml: the
// response must match the operation's response for its status (an
// undocumented status fails), including its headers. The request is checked
// only when the server accepted it (2xx), so the document's request schemas
// are never stricter than the server; requests tests send malformed on
// purpose are refused by the server and are not checked. Paths outside /api
// (dashboard pages, /metrics, /healthz) are skipped, and so are successful
// responses of routes the document does not have (test-only probes mounted
// with Options.Setup); an error from such a path must still be the error
// envelope. req must have been built with http.NewRequest from a
// re-readable body (GetBody), as Do and Send build it.
func checkConformance(req *http.Request, resp *Response) error {
	if !strings.HasPrefix(req.URL.Path, "/api/") {
		return nil
	}
	c, err := loadedContract()
	if err != nil {
		return fmt.Errorf("openapi document: %w", err)
	}
	ctx := context.Background()
	probe, err := c.request(req)
	if err != nil {
		return err
	}
	route, params, err := c.router.FindRoute(probe)
	if err != nil {
		if !errors.Is(err, routers.ErrPathNotFound) && !errors.Is(err, routers.ErrMethodNotAllowed) {
			return fmt.Errorf("openapi: %s %s: find route: %w", req.Method, req.URL.Path, err)
		}
		if resp.Status < 400 {
			return nil
		}
		return c.checkUndocumentedError(req, resp)
	}
	where := fmt.Sprintf("openapi: %s %s (%s %s) → %d", req.Method, req.URL.Path, route.Method, route.Path, resp.Status)
	in := &openapi3filter.RequestValidationInput{Request: probe, PathParams: params, Route: route, Options: validationOptions()}
	if resp.Status >= 200 && resp.Status < 300 {
		if err := openapi3filter.ValidateRequest(ctx, in); err != nil {
			return fmt.Errorf("%s: the server accepted a request the document refuses: %s", where, clip(err.Error()))
		}
	}
	out := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: probe, PathParams: params, Route: route},
		Status:                 resp.Status,
		Header:                 resp.Header,
		Options:                validationOptions(),
	}
	out.SetBodyBytes(resp.Body)
	if err := openapi3filter.ValidateResponse(ctx, out); err != nil {
		return fmt.Errorf("%s: response does not match the document: %s\nbody: %s", where, clip(err.Error()), clip(string(resp.Body)))
	}
	return nil
}

// request returns a copy of req with its own reader of the same body.
func (c *contract) request(req *http.Request) (*http.Request, error) {
	probe := req.Clone(context.Background())
	probe.Body = http.NoBody
	if req.GetBody != nil {
		body, err := req.GetBody()
		if err != nil {
			return nil, fmt.Errorf("openapi: %s %s: re-read request body: %w", req.Method, req.URL.Path, err)
		}
		b, err := io.ReadAll(body)
		if err != nil {
			return nil, fmt.Errorf("openapi: %s %s: re-read request body: %w", req.Method, req.URL.Path, err)
		}
		probe.Body = io.NopCloser(bytes.NewReader(b))
		probe.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
	}
	return probe, nil
}

// checkUndocumentedError holds an error answer to a path or method the
// document does not have to the error envelope and the X-Request-Id header.
func (c *contract) checkUndocumentedError(req *http.Request, resp *Response) error {
	where := fmt.Sprintf("openapi: %s %s (undocumented) → %d", req.Method, req.URL.Path, resp.Status)
	if resp.Header.Get("X-Request-Id") == "" {
		return fmt.Errorf("%s: no X-Request-Id header", where)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		return fmt.Errorf("%s: error with Content-Type %q, not the JSON error envelope", where, ct)
	}
	var v any
	if err := json.Unmarshal(resp.Body, &v); err != nil {
		return fmt.Errorf("%s: error body is not JSON: %w", where, err)
	}
	opts := []openapi3.SchemaValidationOption{openapi3.MultiErrors(), openapi3.VisitAsResponse()}
	if c.doc.IsOpenAPI31OrLater() {
		opts = append(opts, openapi3.EnableJSONSchema2020())
	}
	if err := c.errorSchema.VisitJSON(v, opts...); err != nil {
		return fmt.Errorf("%s: error body is not the error envelope: %s\nbody: %s", where, clip(err.Error()), clip(string(resp.Body)))
	}
	return nil
}

// clip shortens s to maxConformanceError bytes.
func clip(s string) string {
	if len(s) <= maxConformanceError {
		return s
	}
	return s[:maxConformanceError] + "…"
}
