package integration

import (
	"context"
	"net/http"
	"testing"
)

// TRUSTED_PROXIES decides whose X-Forwarded-For names the client: the login
// throttle counts a failed login against the forwarded address when the
// test server's peer (127.0.0.1) is a trusted proxy, and against the peer
// itself otherwise.
func TestTrustedProxiesLoginThrottle(t *testing.T) {
	t.Parallel()
	const forwarded = "203.0.113.7"
	tests := []struct {
		name    string
		trusted string
		want    string // the address the attempt is counted against
	}{
		{"default: header ignored", "", "127.0.0.1"},
		{"peer trusted: forwarded address", "127.0.0.1/32, 10.0.0.0/8", forwarded},
		{"peer not trusted: header ignored", "10.0.0.0/8", "127.0.0.1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			env := map[string]string{}
			if tt.trusted != "" {
				env["TRUSTED_PROXIES"] = tt.trusted
			}
			e := Start(t, Options{Env: env})
			r := e.Do(Request{Method: http.MethodPost, Path: "/api/v1/central/login",
				Header: map[string]string{"X-Forwarded-For": forwarded},
				Body:   map[string]any{"email": uniqueEmail("nobody"), "password": "wrong password here"}})
			if r.Status != http.StatusUnauthorized {
				t.Fatalf("login = %d %s", r.Status, r.Body)
			}
			rows, err := e.App.DB.Pool.Query(context.Background(),
				`SELECT key FROM central.login_throttle WHERE key LIKE 'address:%'`)
			if err != nil {
				t.Fatal(err)
			}
			defer rows.Close()
			var keys []string
			for rows.Next() {
				var k string
				if err := rows.Scan(&k); err != nil {
					t.Fatal(err)
				}
				keys = append(keys, k)
			}
			if len(keys) != 1 || keys[0] != "address:"+tt.want {
				t.Fatalf("address counters %v, want [address:%s]", keys, tt.want)
			}
		})
	}
}
