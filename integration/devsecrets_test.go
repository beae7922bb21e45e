package integration

import (
	"errors"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// A development server started without JWT_SECRET and API_KEY_PEPPER keeps
// the secrets it generates in its database (central.dev_secrets), so a
// restart on the same database keeps everything they protect: an API key
// still authenticates, a Central API access token still verifies, and a
// dashboard session still opens its pages and its CSRF token still passes.
func TestDevelopmentSecretsSurviveRestart(t *testing.T) {
	t.Parallel()
	unset := map[string]string{"JWT_SECRET": "", "API_KEY_PEPPER": ""}
	first := Start(t, Options{Env: unset})
	org := first.Register(t)
	w := newWebClient(t, first)
	w.signup()
	csrf := w.csrf("/senders")
	if r := first.Do(Request{Method: http.MethodGet, Path: "/api/v1/me", Header: org.Key()}); r.Status != http.StatusOK {
		t.Fatalf("GET /me before the restart = %d %s", r.Status, r.Body)
	}
	var kept int
	if err := first.App.DB.Pool.QueryRow(t.Context(), `SELECT count(*) FROM central.dev_secrets
		WHERE name IN ('JWT_SECRET', 'API_KEY_PEPPER') AND length(value) = 32`).Scan(&kept); err != nil {
		t.Fatal(err)
	}
	if kept != 2 {
		t.Fatalf("central.dev_secrets holds %d of the two generated secrets", kept)
	}

	first.Stop()
	second := Start(t, Options{Env: unset, DatabaseURL: first.DatabaseURL})
	w.moveTo(second)

	tests := []struct {
		name string
		req  Request
	}{
		{"api key", Request{Method: http.MethodGet, Path: "/api/v1/me", Header: org.Key()}},
		{"access token", Request{Method: http.MethodGet, Path: "/api/v1/central/me", Header: org.Bearer()}},
		{"refresh token", Request{Method: http.MethodPost, Path: "/api/v1/central/token/refresh",
			Body: map[string]any{"refresh_token": org.RefreshToken}}},
	}
	for _, tt := range tests {
		r := second.Do(tt.req)
		if r.Status != http.StatusOK {
			t.Errorf("%s after the restart: %s %s = %d %s", tt.name, tt.req.Method, tt.req.Path, r.Status, r.Body)
		}
	}
	if r := w.get("/senders"); r.Status != http.StatusOK {
		t.Fatalf("dashboard session after the restart: GET /senders = %d %s", r.Status, r.Header.Get("Location"))
	}
	if r := w.post("/logout", url.Values{"csrf_token": {csrf}}); r.Status != http.StatusSeeOther {
		t.Fatalf("the CSRF token of before the restart: POST /logout = %d %.300s", r.Status, r.Body)
	}
}

// moveTo points the client at another server of the same database (a
// restarted service), carrying its cookies over.
func (w *webClient) moveTo(e *Env) {
	w.t.Helper()
	from, err := url.Parse(w.e.Server.URL)
	if err != nil {
		w.t.Fatal(err)
	}
	to, err := url.Parse(e.Server.URL)
	if err != nil {
		w.t.Fatal(err)
	}
	w.http.Jar.SetCookies(to, w.http.Jar.Cookies(from))
	w.e = e
}

// PLATFORM_ENV=production refuses to start without its secrets: every
// command that runs the service exits 1 before touching the database, and
// says which secret is missing and how to make one.
func TestProductionRefusesUnsetSecrets(t *testing.T) {
	t.Parallel()
	bin := platformBinary(t)
	for _, command := range []string{"serve", "api", "worker", "migrate"} {
		t.Run(command, func(t *testing.T) {
			t.Parallel()
			cmd := exec.CommandContext(t.Context(), bin, command)
			// A database nobody listens on: the refusal must come first.
			cmd.Env = append(os.Environ(), "PLATFORM_ENV=production", "JWT_SECRET=", "API_KEY_PEPPER="+strings.Repeat("p", 32),
				"DATABASE_URL=postgres://postgres@127.0.0.1:1/bizmsg?sslmode=disable")
			out, err := cmd.CombinedOutput()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 1 {
				t.Fatalf("platform %s in production without JWT_SECRET: %v, want exit status 1\n%s", command, err, out)
			}
			for _, want := range []string{"JWT_SECRET: is required when PLATFORM_ENV=production", "openssl rand -hex 32"} {
				if !strings.Contains(string(out), want) {
					t.Fatalf("platform %s output lacks %q:\n%s", command, want, out)
				}
			}
			if strings.Contains(string(out), "API_KEY_PEPPER") || strings.Contains(string(out), "127.0.0.1:1") {
				t.Fatalf("platform %s names a secret that is set, or tried the database:\n%s", command, out)
			}
		})
	}
}
