package accounts_test

import (
	"encoding/json"
	"net/mail"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/bizmsg/platform/platform/accounts"
	"github.com/bizmsg/platform/platform/fuzzcheck"
	"github.com/bizmsg/platform/platform/httpx"
)

// rawStrings decodes the string members of a JSON object body.
func rawStrings(body []byte) map[string]string {
	var raw map[string]json.RawMessage
	if json.Unmarshal(body, &raw) != nil {
		return nil
	}
	out := map[string]string{}
	for k, v := range raw {
		var s string
		if json.Unmarshal(v, &s) == nil {
			out[k] = s
		}
	}
	return out
}

// FuzzRegistration: any body of POST /register is decoded (httpx.BindJSON,
// as the handler does) and validated (Registration.Validate, as Register
// does) into a normalised registration, or refused as the client's fault
// naming its fields; a control character in a name or the email is refused
// naming the field (the password refuses NUL only).
func FuzzRegistration(f *testing.F) {
	for _, s := range []string{
		`{"organization_name":"Acme","name":"Ada","email":"ada@example.com","password":"correct horse battery"}`,
		`{"organization_name":"  Acme  ","name":"Ada","email":" ADA@Example.COM ","password":"tab\there is fine!"}`,
		`{"organization_name":"Ac\u0001me","name":"A\nda","email":"ada@exa\tmple.com","password":"short"}`,
		`{"organization_name":"Acme\u0000","name":"Ada","email":"ada@example.com","password":"correct horse battery"}`,
		`{"organization_name":"","name":"","email":"Ada <ada@example.com>","password":""}`,
		`{"organization_name":1,"name":[],"email":{},"password":null}`, `{}`, `[]`, `nul`,
	} {
		f.Add([]byte(s))
	}
	fields := []string{"organization_name", "name", "email", "password"}
	f.Fuzz(func(t *testing.T, body []byte) {
		var r accounts.Registration
		if err := httpx.BindJSON(fuzzcheck.JSONContext(body), &r); err != nil {
			fuzzcheck.Refusal(t, err, fields...)
			return
		}
		got, err := r.Validate()
		raw := rawStrings(body)
		for _, name := range []string{"organization_name", "name", "email"} {
			if fuzzcheck.InnerControl(raw[name]) {
				if err == nil {
					t.Fatalf("%s %q accepted", name, raw[name])
				}
				fuzzcheck.Names(t, err, name)
			}
		}
		if err != nil {
			fuzzcheck.Refusal(t, err, fields...)
			return
		}
		for _, n := range []string{got.OrganizationName, got.Name} {
			if n == "" || n != strings.TrimSpace(n) || utf8.RuneCountInString(n) > 200 || fuzzcheck.Control(n) {
				t.Fatalf("name %q accepted", n)
			}
		}
		if got.Email != strings.ToLower(got.Email) || len(got.Email) > 254 || fuzzcheck.Control(got.Email) {
			t.Fatalf("email %q accepted", got.Email)
		}
		if a, err := mail.ParseAddress(got.Email); err != nil || a.Address != got.Email {
			t.Fatalf("email %q is not a plain address", got.Email)
		}
		if utf8.RuneCountInString(got.Password) < 12 || fuzzcheck.NUL(got.Password) {
			t.Fatalf("password %q accepted", got.Password)
		}
		if again, err := got.Validate(); err != nil || again != got {
			t.Fatalf("normalised registration %+v validates to %+v, %v", got, again, err)
		}
	})
}

// FuzzCredentials: any body of POST /login is decoded and validated
// (Credentials.Validate, as Login does before any password work) or
// refused naming its fields; an email with a control character is refused
// naming it, so it never reaches the throttle or the password check.
func FuzzCredentials(f *testing.F) {
	for _, s := range []string{
		`{"email":"ada@example.com","password":"correct horse battery"}`, `{"email":" ADA@example.com\n","password":"x"}`,
		`{"email":"ada@exa\u0007mple.com","password":"x"}`, `{"email":"","password":""}`, `{"email":"a\u0000"}`,
		`{"email":5,"password":true}`, `{}`, `[1]`, ``,
	} {
		f.Add([]byte(s))
	}
	fields := []string{"email", "password"}
	f.Fuzz(func(t *testing.T, body []byte) {
		var c accounts.Credentials
		if err := httpx.BindJSON(fuzzcheck.JSONContext(body), &c); err != nil {
			fuzzcheck.Refusal(t, err, fields...)
			return
		}
		got, err := c.Validate()
		if email := rawStrings(body)["email"]; fuzzcheck.InnerControl(email) {
			if err == nil {
				t.Fatalf("email %q accepted", email)
			}
			fuzzcheck.Names(t, err, "email")
		}
		if err != nil {
			fuzzcheck.Refusal(t, err, fields...)
			return
		}
		if got.Email == "" || got.Email != strings.ToLower(strings.TrimSpace(got.Email)) || fuzzcheck.Control(got.Email) || got.Password == "" {
			t.Fatalf("credentials %+v accepted", got)
		}
	})
}
