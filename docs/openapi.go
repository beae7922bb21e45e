// Package docs holds the service's documentation. Its one piece of Go embeds
// the OpenAPI document, so that the binary serves the very bytes the
// integration tests hold the server to (integration/conformance.go reads
// docs/openapi.yaml from this directory).
package docs

import (
	_ "embed"
	"slices"
)

//go:embed openapi.yaml
var openAPIYAML []byte

// OpenAPIYAML returns a copy of docs/openapi.yaml as it was when the binary
// was built.
func OpenAPIYAML() []byte { return slices.Clone(openAPIYAML) }
