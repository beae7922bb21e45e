package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"go.yaml.in/yaml/v3"

	"github.com/bizmsg/platform/docs"
	"github.com/bizmsg/platform/platform/apidoc"
)

// The service serves the document the conformance checks hold it to: the
// YAML byte for byte (the file this package reads, which the binary
// embeds), and JSON that is the same document. Both are public and
// revalidate with their ETag. Every exchange also goes through the
// conformance check (Do), so the document describes its own two routes.
func TestOpenAPIDocumentServed(t *testing.T) {
	t.Parallel()
	e := Start(t, Options{})
	file, err := os.ReadFile(OpenAPIPath)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(file, docs.OpenAPIYAML()) {
		t.Fatalf("the binary embeds another docs/openapi.yaml than %s (rebuild?)", OpenAPIPath)
	}

	y := e.Do(Request{Method: http.MethodGet, Path: apidoc.YAMLPath})
	if y.Status != http.StatusOK || y.Header.Get("Content-Type") != "application/yaml" {
		t.Fatalf("GET %s: %d %s", apidoc.YAMLPath, y.Status, y.Header.Get("Content-Type"))
	}
	// What /docs renders is for the API's users: it names no file of the
	// platform's own tests.
	for _, internal := range []string{"_test.go", "integration/"} {
		if bytes.Contains(y.Body, []byte(internal)) {
			t.Fatalf("the served document names %q, a file of the platform's tests", internal)
		}
	}
	if !bytes.Equal(y.Body, file) {
		t.Errorf("GET %s is not the bytes of %s", apidoc.YAMLPath, OpenAPIPath)
	}

	j := e.Do(Request{Method: http.MethodGet, Path: apidoc.JSONPath})
	if j.Status != http.StatusOK || j.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("GET %s: %d %s", apidoc.JSONPath, j.Status, j.Header.Get("Content-Type"))
	}
	// The same document as an independent YAML parser reads the file.
	var fromYAML any
	if err := yaml.Unmarshal(file, &fromYAML); err != nil {
		t.Fatal(err)
	}
	var fromJSON any
	if err := json.Unmarshal(j.Body, &fromJSON); err != nil {
		t.Fatalf("GET %s is not JSON: %v", apidoc.JSONPath, err)
	}
	if diff := firstDifference("", jsonValue(fromYAML), fromJSON); diff != "" {
		t.Errorf("GET %s differs from %s: %s", apidoc.JSONPath, OpenAPIPath, diff)
	}
	// And the same document as the conformance checks load it.
	c, err := loadedContract()
	if err != nil {
		t.Fatal(err)
	}
	loader := openapi3.NewLoader()
	served, err := loader.LoadFromData(j.Body)
	if err != nil {
		t.Fatalf("kin-openapi cannot load GET %s: %v", apidoc.JSONPath, err)
	}
	if err := served.Validate(context.Background()); err != nil {
		t.Fatalf("GET %s does not validate: %v", apidoc.JSONPath, err)
	}
	a, err := json.Marshal(served)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(c.doc)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) {
		t.Errorf("GET %s loads as another document than the conformance checks' %s", apidoc.JSONPath, OpenAPIPath)
	}

	// Revalidation: the ETag answers 304, another tag the document. No key
	// is needed, and a wrong one is not looked at.
	for _, r := range []*Response{y, j} {
		if r.Header.Get("ETag") == "" || r.Header.Get("Cache-Control") != "no-cache" {
			t.Errorf("headers %v", r.Header)
		}
	}
	if y.Header.Get("ETag") == j.Header.Get("ETag") {
		t.Errorf("the YAML and the JSON share the ETag %s", y.Header.Get("ETag"))
	}
	for path, etag := range map[string]string{apidoc.YAMLPath: y.Header.Get("ETag"), apidoc.JSONPath: j.Header.Get("ETag")} {
		r := e.Do(Request{Method: http.MethodGet, Path: path, Header: map[string]string{"If-None-Match": etag}})
		if r.Status != http.StatusNotModified || len(r.Body) != 0 || r.Header.Get("ETag") != etag {
			t.Errorf("GET %s If-None-Match %s: %d, %d bytes, ETag %q", path, etag, r.Status, len(r.Body), r.Header.Get("ETag"))
		}
		r = e.Do(Request{Method: http.MethodGet, Path: path, Header: map[string]string{"If-None-Match": `"0"`, "X-Api-Key": "bmk_wrong"}})
		if r.Status != http.StatusOK || r.Header.Get("ETag") != etag || r.Header.Get("RateLimit-Limit") != "" {
			t.Errorf("GET %s with another tag and a wrong key: %d, ETag %q, RateLimit-Limit %q", path, r.Status, r.Header.Get("ETag"), r.Header.Get("RateLimit-Limit"))
		}
	}

	// The reference page is public too, under its strict policy.
	p := e.Do(Request{Method: http.MethodGet, Path: apidoc.PagePath})
	if p.Status != http.StatusOK || !strings.HasPrefix(p.Header.Get("Content-Type"), "text/html") ||
		p.Header.Get("Content-Security-Policy") != apidoc.ContentSecurityPolicy {
		t.Errorf("GET %s: %d, headers %v", apidoc.PagePath, p.Status, p.Header)
	}
}

// jsonValue turns what yaml.v3 decodes into what encoding/json decodes the
// same document into: string-keyed maps, float64 numbers.
func jsonValue(v any) any {
	switch v := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(v))
		for k, x := range v {
			m[k] = jsonValue(x)
		}
		return m
	case map[any]any:
		m := make(map[string]any, len(v))
		for k, x := range v {
			m[fmt.Sprint(k)] = jsonValue(x)
		}
		return m
	case []any:
		s := make([]any, len(v))
		for i, x := range v {
			s[i] = jsonValue(x)
		}
		return s
	case int:
		return float64(v)
	case int64:
		return float64(v)
	case uint64:
		return float64(v)
	default:
		return v
	}
}

// firstDifference names the first place where a and b (JSON values)
// differ, or returns "".
func firstDifference(at string, a, b any) string {
	switch a := a.(type) {
	case map[string]any:
		bm, ok := b.(map[string]any)
		if !ok {
			return fmt.Sprintf("%s: object against %T", at, b)
		}
		keys := make([]string, 0, len(a)+len(bm))
		for k := range a {
			keys = append(keys, k)
		}
		for k := range bm {
			if _, ok := a[k]; !ok {
				keys = append(keys, k)
			}
		}
		slices.Sort(keys)
		for _, k := range keys {
			if d := firstDifference(at+"/"+k, a[k], bm[k]); d != "" {
				return d
			}
		}
		return ""
	case []any:
		bs, ok := b.([]any)
		if !ok || len(a) != len(bs) {
			return fmt.Sprintf("%s: %v against %v", at, a, b)
		}
		for i := range a {
			if d := firstDifference(fmt.Sprintf("%s/%d", at, i), a[i], bs[i]); d != "" {
				return d
			}
		}
		return ""
	default:
		if !reflect.DeepEqual(a, b) {
			return fmt.Sprintf("%s: %#v against %#v", at, a, b)
		}
		return ""
	}
}
