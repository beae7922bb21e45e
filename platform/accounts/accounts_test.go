package accounts_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bizmsg/platform/platform/accounts"
	"github.com/bizmsg/platform/platform/apperr"
	"github.com/bizmsg/platform/platform/clock"
	"github.com/bizmsg/platform/platform/dbtest"
	"github.com/bizmsg/platform/platform/migrate"
	"github.com/bizmsg/platform/platform/page"
	"github.com/bizmsg/platform/platform/token"
)

func TestKeyID(t *testing.T) {
	t.Parallel()
	a, b := bytes.Repeat([]byte("a"), 32), bytes.Repeat([]byte("b"), 32)
	if accounts.KeyID(a) != accounts.KeyID(bytes.Clone(a)) || accounts.KeyID(a) == accounts.KeyID(b) || !strings.HasPrefix(accounts.KeyID(a), "k") || len(accounts.KeyID(a)) != 13 {
		t.Fatalf("KeyID(a) = %q, accounts.KeyID(b) = %q", accounts.KeyID(a), accounts.KeyID(b))
	}
	if strings.Contains(accounts.KeyID(a), "aaaa") {
		t.Fatal("kid reveals the secret")
	}
	tests := []struct {
		name     string
		previous []byte
		want     []string
	}{
		{"current only", nil, []string{accounts.KeyID(a)}},
		{"with previous", b, []string{accounts.KeyID(a), accounts.KeyID(b)}},
	}
	for _, tt := range tests {
		got := accounts.SigningKeys(a, tt.previous)
		if len(got) != len(tt.want) {
			t.Fatalf("%s: %d keys", tt.name, len(got))
		}
		for i, k := range got {
			if k.ID != tt.want[i] {
				t.Errorf("%s: key %d id %q, want %q", tt.name, i, k.ID, tt.want[i])
			}
		}
	}
}

// newTestService returns a accounts.Service on a fresh migrated database.
func newTestService(t *testing.T, throttle accounts.ThrottleConfig) (*accounts.Service, *clock.Fake) {
	t.Helper()
	d, _ := dbtest.Migrated(t)
	clk := clock.NewFake(time.Date(2026, 11, 22, 14, 0, 0, 0, time.UTC))
	m, err := migrate.New(migrate.Config{Pool: d.Pool, Logger: slog.New(slog.NewJSONHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	iss, err := token.NewIssuer(token.Config{Keys: accounts.SigningKeys(bytes.Repeat([]byte("j"), 32), nil), Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	svc, err := accounts.New(accounts.Config{DB: d, Migrator: m, Issuer: iss, Clock: clk, Throttle: throttle})
	if err != nil {
		t.Fatal(err)
	}
	return svc, clk
}

func errCode(err error) string {
	if e, ok := apperr.As(err); ok {
		return e.Code
	}
	return ""
}

func TestServiceSessions(t *testing.T) {
	t.Parallel()
	svc, clk := newTestService(t, accounts.ThrottleConfig{AccountLimit: 3, AddressLimit: 100})
	ctx := context.Background()
	reg, err := svc.Register(ctx, accounts.Registration{OrganizationName: "Acme", Name: "Ann", Email: "Ann@Example.com", Password: "twelve chars!"})
	if err != nil {
		t.Fatal(err)
	}
	if reg.User.Email != "ann@example.com" || reg.Organization.DefaultDailyLimit != accounts.DefaultDailyLimit || reg.Organization.Tenant.Schema == "" {
		t.Fatalf("Register = %+v", reg)
	}
	p, err := svc.Authenticate(ctx, reg.AccessToken)
	if err != nil || p.Role != accounts.RoleOwner || p.OrgID != reg.Organization.ID || p.Tenant != reg.Organization.Tenant {
		t.Fatalf("Authenticate = %+v, %v", p, err)
	}

	// Eight concurrent wrong passwords: exactly AccountLimit are checked.
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		counts = map[string]int{}
	)
	for range 8 {
		wg.Go(func() {
			_, err := svc.Login(ctx, accounts.Credentials{Email: "ann@example.com", Password: "wrong password"}, "192.0.2.7")
			mu.Lock()
			counts[errCode(err)]++
			mu.Unlock()
		})
	}
	wg.Wait()
	if counts["invalid_credentials"] != 3 || counts["too_many_login_attempts"] != 5 {
		t.Fatalf("outcomes = %v", counts)
	}
	clk.Advance(15 * time.Minute)
	sess, err := svc.Login(ctx, accounts.Credentials{Email: "ann@example.com", Password: "twelve chars!"}, "192.0.2.7")
	if err != nil {
		t.Fatalf("login after the window: %v", err)
	}

	// Rotation and reuse detection.
	next, err := svc.Refresh(ctx, sess.RefreshToken)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Refresh(ctx, sess.RefreshToken); errCode(err) != "invalid_refresh_token" {
		t.Fatalf("reuse = %v", err)
	}
	if _, err := svc.Refresh(ctx, next.RefreshToken); errCode(err) != "invalid_refresh_token" {
		t.Fatalf("after reuse the family is revoked, got %v", err)
	}
	// The registration's own session is another family and still works.
	if _, err := svc.Refresh(ctx, reg.RefreshToken); err != nil {
		t.Fatalf("other family: %v", err)
	}
}

// Two owners removing each other at the same moment: exactly one succeeds,
// the organization keeps an owner.
func TestRemoveOwnersConcurrently(t *testing.T) {
	t.Parallel()
	svc, _ := newTestService(t, accounts.ThrottleConfig{})
	ctx := context.Background()
	reg, err := svc.Register(ctx, accounts.Registration{OrganizationName: "Acme", Name: "A", Email: "a@example.com", Password: "twelve chars!"})
	if err != nil {
		t.Fatal(err)
	}
	first := accounts.Principal{UserID: reg.User.ID, OrgID: reg.Organization.ID, Role: accounts.RoleOwner, Tenant: reg.Organization.Tenant}
	u, err := svc.AddMember(ctx, first, accounts.NewMember{Name: "B", Email: "b@example.com", Role: accounts.RoleOwner, Password: "twelve chars!"})
	if err != nil {
		t.Fatal(err)
	}
	second := first
	second.UserID = u.ID
	errs := make([]error, 2)
	var wg sync.WaitGroup
	wg.Go(func() { errs[0] = svc.RemoveMember(ctx, first, second.UserID) })
	wg.Go(func() { errs[1] = svc.RemoveMember(ctx, second, first.UserID) })
	wg.Wait()
	ok := 0
	for _, err := range errs {
		switch {
		case err == nil:
			ok++
		case errCode(err) == "last_owner", errCode(err) == "invalid_token":
		default:
			t.Fatalf("remove: %v", err)
		}
	}
	members, _, err := svc.Members(ctx, first.OrgID, page.Query{Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if ok != 1 || len(members) != 1 || members[0].Role != accounts.RoleOwner {
		t.Fatalf("%d removals succeeded, members %+v", ok, members)
	}
}
