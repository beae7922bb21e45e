package integration

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/bizmsg/platform/platform/db"
)

// Org is an organization registered through the Central API by Register.
type Org struct {
	// ID is the organization's id; Tenant its schema.
	ID     int64
	Tenant db.Tenant
	Name   string
	// OwnerID, OwnerEmail and OwnerPassword identify the owner who registered.
	OwnerID       int64
	OwnerEmail    string
	OwnerPassword string
	// AccessToken and RefreshToken are the owner's session from registration.
	AccessToken  string
	RefreshToken string
	// APIKey is a key with scope "*" created through the Central API, and
	// APIKeyID its id.
	APIKey   string
	APIKeyID int64
}

// Bearer returns the Authorization header of the owner's access token.
func (o *Org) Bearer() map[string]string { return Bearer(o.AccessToken) }

// Key returns the X-Api-Key header of the organization's "*" key.
func (o *Org) Key() map[string]string { return KeyHeader(o.APIKey) }

// Bearer returns an Authorization: Bearer header.
func Bearer(accessToken string) map[string]string {
	return map[string]string{"Authorization": "Bearer " + accessToken}
}

// KeyHeader returns an X-Api-Key header.
func KeyHeader(key string) map[string]string { return map[string]string{"X-Api-Key": key} }

// uniqueEmail returns an email address no other test uses.
func uniqueEmail(who string) string {
	return who + "-" + strings.ToLower(rand.Text()) + "@example.com"
}

// Register registers a new organization through POST /api/v1/central/register
// and creates an API key with scope "*" through the Central API.
func (e *Env) Register(t testing.TB) *Org {
	t.Helper()
	o := &Org{Name: "Org " + rand.Text()[:8], OwnerEmail: uniqueEmail("owner"), OwnerPassword: "correct horse battery staple"}
	r := e.Do(Request{Method: http.MethodPost, Path: "/api/v1/central/register", Body: map[string]any{
		"organization_name": o.Name, "name": "Owner", "email": o.OwnerEmail, "password": o.OwnerPassword,
	}})
	if r.Status != http.StatusCreated {
		t.Fatalf("register = %d %s", r.Status, r.Body)
	}
	var reg struct {
		User struct {
			ID int64 `json:"id"`
		} `json:"user"`
		Organization struct {
			ID int64 `json:"id"`
		} `json:"organization"`
		AccessToken  string `json:"access_token"`
		RefreshToken string `json:"refresh_token"`
	}
	r.JSON(t, &reg)
	o.ID, o.OwnerID, o.AccessToken, o.RefreshToken = reg.Organization.ID, reg.User.ID, reg.AccessToken, reg.RefreshToken
	o.Tenant = db.Tenant{OrgID: o.ID, Schema: db.SchemaFor(o.ID)}
	o.APIKey, o.APIKeyID = e.CentralKey(t, o, "*")
	return o
}

// APIKey creates a key with the given scopes (default "*") for org through
// the Central API and returns its plain value.
func (e *Env) APIKey(t testing.TB, org *Org, scopes ...string) string {
	t.Helper()
	key, _ := e.CentralKey(t, org, scopes...)
	return key
}

// CentralKey creates a key with the given scopes (default "*") for org
// through the Central API and returns its plain value and id.
func (e *Env) CentralKey(t testing.TB, org *Org, scopes ...string) (string, int64) {
	t.Helper()
	if len(scopes) == 0 {
		scopes = []string{"*"}
	}
	r := e.Do(Request{Method: http.MethodPost, Path: "/api/v1/central/api-keys", Header: org.Bearer(),
		Body: map[string]any{"name": "fixture key", "scopes": scopes}})
	if r.Status != http.StatusCreated {
		t.Fatalf("create api key = %d %s", r.Status, r.Body)
	}
	var k struct {
		ID           int64  `json:"id"`
		PlainTextKey string `json:"plain_text_key"`
	}
	r.JSON(t, &k)
	if k.PlainTextKey == "" {
		t.Fatalf("create api key: no plain_text_key in %s", r.Body)
	}
	return k.PlainTextKey, k.ID
}

// Send performs req like Do, but returns failures instead of failing the
// test, so it may be called from any goroutine.
func (e *Env) Send(req Request) (*Response, error) {
	return SendTo(e.T, e.Server.Client(), e.Server.URL, req)
}

// SendTo performs req with client against the service at base (such as
// "http://127.0.0.1:8080", a `platform api` process), like Send: it returns
// failures instead of failing the test, and reports a response that breaks
// docs/openapi.yaml with t.Errorf, so it may be called from any goroutine.
func SendTo(t testing.TB, client *http.Client, base string, req Request) (*Response, error) {
	var body io.Reader
	switch b := req.Body.(type) {
	case nil:
	case []byte:
		body = bytes.NewReader(b)
	case string:
		body = strings.NewReader(b)
	default:
		buf, err := json.Marshal(b)
		if err != nil {
			return nil, fmt.Errorf("marshal: %w", err)
		}
		body = bytes.NewReader(buf)
	}
	hr, err := http.NewRequestWithContext(t.Context(), req.Method, base+req.Path, body)
	if err != nil {
		return nil, err
	}
	hr.Header.Set("Accept", "application/json")
	if body != nil {
		hr.Header.Set("Content-Type", "application/json")
	}
	for k, v := range req.Header {
		hr.Header.Set(k, v)
	}
	resp, err := client.Do(hr)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", req.Method, req.Path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("read body: %w", err)
	}
	out := &Response{Status: resp.StatusCode, Header: resp.Header, Body: b}
	// Errorf, not an error: callers count outcomes, and t.Errorf is safe
	// from any goroutine.
	if err := checkConformance(hr, out); err != nil {
		t.Errorf("%v", err)
	}
	return out, nil
}
