// Package client is a typed Go client of the platform's Tenant and Central
// APIs, generated from docs/openapi.yaml by oapi-codegen (client.gen.go,
// configured by oapi-codegen.yaml and overlay.yaml; docs/design.md, §The Go
// client). Regenerate it with `go generate ./client/...` after changing the
// document; .ci/run fails while the committed client differs from what the
// document generates.
//
// Every operation has a method on ClientWithResponses named after its
// operationId (TenantSendMessageWithResponse, TenantLookupWithResponse,
// ...) that returns the HTTP status, the raw body and the body decoded for
// each documented status (JSON202, JSON422, ...). Error bodies decode into
// *Error, which is an error; Check turns any response into nil or one.
//
//	c, err := client.NewClientWithResponses("http://localhost:8080", client.WithAPIKey(key))
//	rsp, err := c.TenantSendMessageWithResponse(ctx, nil, client.SendMessageRequest{
//		SenderNumberId: &senderID, ToPhone: "+14155550199", Type: client.Text, Content: new("Hello"),
//	})
//	if err == nil {
//		err = client.Check(rsp.StatusCode(), rsp.Body)
//	}
package client

//go:generate go tool oapi-codegen -config oapi-codegen.yaml ../docs/openapi.yaml
