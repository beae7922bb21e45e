package integration

import (
	"context"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
)

// ginParam matches a gin path parameter (":id", "*path").
var ginParam = regexp.MustCompile(`[:*]([A-Za-z0-9_]+)`)

// openAPIOperation is "METHOD /path/{param}".
func openAPIOperation(method, path string) string {
	return method + " " + ginParam.ReplaceAllString(path, "{$1}")
}

// The document loads, is a valid OpenAPI 3.1 document, and has what the
// conformance checks rely on.
func TestOpenAPIDocumentValid(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	loader := openapi3.NewLoader()
	loader.Context = ctx
	doc, err := loader.LoadFromFile(OpenAPIPath)
	if err != nil {
		t.Fatalf("load %s: %v", OpenAPIPath, err)
	}
	if err := doc.Validate(ctx, openapi3.EnableMultiError()); err != nil {
		t.Fatalf("validate %s:\n%v", OpenAPIPath, err)
	}
	if !doc.IsOpenAPI31OrLater() {
		t.Errorf("openapi = %q, want 3.1", doc.OpenAPI)
	}
	for _, name := range []string{"Error", "Message", "Sender", "ApiKey", "ApiKeyWithSecret", "LookupResult", "UsageReport", "TenantMe", "CentralMe", "User", "Session",
		"WebhookEndpoint", "WebhookEndpointWithSecret", "WebhookDelivery", "WebhookPayload"} {
		if doc.Components.Schemas[name] == nil {
			t.Errorf("components.schemas.%s is missing", name)
		}
	}
	for _, name := range []string{"ApiKey", "Bearer"} {
		if doc.Components.SecuritySchemes[name] == nil {
			t.Errorf("components.securitySchemes.%s is missing", name)
		}
	}
	// Every operation documents X-Request-Id on every response, and every
	// Tenant API success its RateLimit fields (public operations, such as
	// the document itself, need no key and have no request-rate limit).
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			for status, resp := range op.Responses.Map() {
				if resp.Value.Headers["X-Request-Id"] == nil {
					t.Errorf("%s %s %s: no X-Request-Id header", method, path, status)
				}
				public := op.Security != nil && len(*op.Security) == 0
				tenant := strings.HasPrefix(path, "/api/v1/") && !strings.HasPrefix(path, "/api/v1/central/") && !strings.HasPrefix(path, "/api/v1/network/") && !public
				if tenant && strings.HasPrefix(status, "2") {
					for _, h := range []string{"RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset", "RateLimit-Policy"} {
						if hr := resp.Value.Headers[h]; hr == nil || !hr.Value.Required {
							t.Errorf("%s %s %s: %s is not a required header", method, path, status, h)
						}
					}
				}
				if status == "429" {
					if hr := resp.Value.Headers["Retry-After"]; hr == nil || !hr.Value.Required {
						t.Errorf("%s %s 429: Retry-After is not a required header", method, path)
					}
				}
			}
		}
	}
}

// Every route the server registers under /api is documented with its
// method, and every documented operation is served: the route table and the
// document cannot drift apart. The service runs with NETWORK=http so that
// the network event callback, mounted only then, is registered.
func TestOpenAPIRouteTable(t *testing.T) {
	t.Parallel()
	e := Start(t, Options{Env: map[string]string{
		"NETWORK":        "http",
		"NETWORK_URL":    "http://127.0.0.1:1",
		"NETWORK_SECRET": strings.Repeat("s", 32),
	}})
	c, err := loadedContract()
	if err != nil {
		t.Fatal(err)
	}
	served := map[string]bool{}
	for _, r := range e.App.Engine.Routes() {
		served[openAPIOperation(r.Method, r.Path)] = true
	}
	documented := map[string]bool{}
	for path, item := range c.doc.Paths.Map() {
		for method := range item.Operations() {
			documented[method+" "+path] = true
		}
	}
	var undocumented, missing []string
	for op := range served {
		if strings.Contains(op, " /api/") && !documented[op] {
			undocumented = append(undocumented, op)
		}
	}
	for op := range documented {
		if !served[op] {
			missing = append(missing, op)
		}
	}
	slices.Sort(undocumented)
	slices.Sort(missing)
	if len(undocumented) > 0 {
		t.Errorf("routes the server registers but docs/openapi.yaml does not document:\n  %s", strings.Join(undocumented, "\n  "))
	}
	if len(missing) > 0 {
		t.Errorf("operations docs/openapi.yaml documents but the server does not register:\n  %s", strings.Join(missing, "\n  "))
	}
	if len(served) == 0 || !served[http.MethodGet+" /api/v1/me"] {
		t.Fatalf("the engine's route table looks wrong: %v", served)
	}
}
