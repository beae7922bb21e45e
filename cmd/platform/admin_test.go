package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"log/slog"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/dbtest"
	"github.com/bizmsg/platform/platform/migrate"
	"github.com/bizmsg/platform/platform/network/builtin"
	"github.com/bizmsg/platform/platform/network/networktest"
	"github.com/bizmsg/platform/platform/queue"
	"github.com/bizmsg/platform/platform/senders"
)

// TestAdminCommandErrors covers what fails before any database work.
func TestAdminCommandErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args    []string
		wantErr string // "" for flag.ErrHelp
	}{
		{[]string{"admin"}, ""},
		{[]string{"admin", "sender"}, ""},
		{[]string{"admin", "sender", "suspend", "-h"}, ""},
		{[]string{"admin", "bogus"}, `unknown admin area "bogus"`},
		{[]string{"admin", "sender", "bogus"}, `unknown admin sender command "bogus"`},
		{[]string{"admin", "sender", "suspend"}, "--phone is required"},
		{[]string{"admin", "sender", "suspend", "--phone", "+14155550001", "extra"}, `unexpected argument "extra"`},
		{[]string{"admin", "sender", "reject", "--phone", "+14155550001", "--org", "-3"}, "--org must be a positive"},
		{[]string{"admin", "sender", "set-limit", "--phone", "+14155550001"}, "--limit is required"},
		{[]string{"admin", "sender", "set-limit", "--phone", "+14155550001", "--limit", "0"}, "--limit must be an integer"},
		{[]string{"admin", "sender", "set-limit", "--phone", "+14155550001", "--limit", "ten"}, "--limit must be an integer"},
		{[]string{"admin", "sender", "suspend", "--phone", "+14155550001", "--limit", "5"}, "flag provided but not defined"},
		{[]string{"admin", "message"}, ""},
		{[]string{"admin", "message", "list"}, `unknown admin message command "list"`},
		{[]string{"admin", "message", "show"}, "--id and --org are required"},
		{[]string{"admin", "message", "show", "--id", "5"}, "--id and --org are required"},
		{[]string{"admin", "campaign"}, ""},
		{[]string{"admin", "campaign", "show"}, `unknown admin campaign command "show"`},
		{[]string{"admin", "campaign", "explain", "--org", "2"}, "admin campaign explain: --id and --org are required"},
		{[]string{"admin", "jobs"}, ""},
		{[]string{"admin", "jobs", "purge"}, `unknown admin jobs command "purge"`},
		{[]string{"admin", "jobs", "retry", "--since", "2h"}, "--kind must be deliver or otp"},
		{[]string{"admin", "jobs", "retry", "--kind", "deliver", "--since", "2h", "--state", "running"}, "--state must be discarded or cancelled"},
		{[]string{"admin", "jobs", "retry", "--kind", "deliver"}, "--since is required"},
		{[]string{"admin", "jobs", "retry", "--kind", "deliver", "--since", "yesterday"}, "--since must be an RFC 3339 time or a positive duration"},
		{[]string{"admin", "jobs", "retry", "--kind", "deliver", "--since", "-2h"}, "--since must be an RFC 3339 time or a positive duration"},
		{[]string{"admin", "citus"}, ""},
		{[]string{"admin", "citus", "rebalance"}, `unknown admin citus command "rebalance"`},
		{[]string{"admin", "citus", "move"}, "--org (a positive id) and --node are required"},
		{[]string{"admin", "citus", "move", "--org", "3"}, "--org (a positive id) and --node are required"},
		{[]string{"admin", "citus", "where", "extra"}, `unexpected argument "extra"`},
	} {
		_, _, err := runCmd(t, tc.args...)
		switch {
		case tc.wantErr == "" && !errors.Is(err, flag.ErrHelp):
			t.Errorf("%v: err %v, want help", tc.args, err)
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("%v: err %v, want %q", tc.args, err, tc.wantErr)
		}
	}
	if out := mustRun(t, "admin", "help"); !strings.Contains(out, "sender set-limit") {
		t.Fatalf("admin help = %q", out)
	}
}

// TestAdminSenderCommands drives the sender commands against a database with
// two organizations sharing a phone, as an operator would. It sets the
// environment, so it does not run in parallel.
func TestAdminSenderCommands(t *testing.T) {
	d, dbURL := dbtest.Migrated(t)
	t.Setenv("DATABASE_URL", dbURL)
	t.Setenv("LOG_LEVEL", "warn")
	ctx := context.Background()
	const owner, solo = "+14155550101", "+14155550102"

	quiet := slog.New(slog.NewJSONHandler(io.Discard, nil))
	mig, err := migrate.New(migrate.Config{Pool: d.Pool, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	org := func(name string) db.Tenant {
		var id int64
		if err := d.Pool.QueryRow(ctx, `INSERT INTO central.organizations (name) VALUES ($1) RETURNING id`, name).Scan(&id); err != nil {
			t.Fatal(err)
		}
		if _, err := d.Pool.Exec(ctx, `UPDATE central.organizations SET schema_name = $2 WHERE id = $1`, id, db.SchemaFor(id)); err != nil {
			t.Fatal(err)
		}
		tn, _ := db.NewTenant(id, db.SchemaFor(id))
		if _, err := mig.Tenant(ctx, tn); err != nil {
			t.Fatal(err)
		}
		return tn
	}
	nw := networktest.Builtin(t, builtin.Config{DB: d})
	rc, err := queue.NewClient(queue.Config{Pool: d.Pool, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	svc, err := senders.New(senders.Config{DB: d, Jobs: rc, Network: nw, Logger: quiet, Secret: []byte(strings.Repeat("k", 32))})
	if err != nil {
		t.Fatal(err)
	}
	a, b := org("Acme"), org("Beta")
	if _, err := nw.AddAccount(ctx, builtin.AccountSpec{Phone: owner, Verified: true, PhoneVerified: true, ReceivingEnabled: true}); err != nil {
		t.Fatal(err)
	}
	sa, err := svc.Register(ctx, a, senders.RegisterInput{Phone: owner})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []struct {
		tn db.Tenant
		p  string
	}{{b, owner}, {b, solo}} {
		if _, err := svc.Register(ctx, r.tn, senders.RegisterInput{Phone: r.p}); err != nil {
			t.Fatal(err)
		}
	}
	// Activate A's number: deliver its OTP as the worker would, read the code
	// from the owner's inbox, verify it.
	var raw []byte
	if err := d.Pool.QueryRow(ctx, `SELECT args FROM river.river_job WHERE kind = 'sender_otp' AND args->>'schema' = $1`, a.Schema).Scan(&raw); err != nil {
		t.Fatal(err)
	}
	var args queue.OTPArgs
	if err := json.Unmarshal(raw, &args); err != nil {
		t.Fatal(err)
	}
	if err := svc.DeliverOTP(ctx, args); err != nil {
		t.Fatal(err)
	}
	inbox, err := nw.Inbox(ctx, owner)
	if err != nil || len(inbox) != 1 {
		t.Fatalf("inbox %v %v", inbox, err)
	}
	code := regexp.MustCompile(`code is (\d{6})`).FindStringSubmatch(inbox[0].Content)[1]
	if _, err := svc.Verify(ctx, a, sa.ID, code); err != nil {
		t.Fatal(err)
	}

	decode := func(out string) map[string]any {
		t.Helper()
		lines := jsonLines(t, out)
		if len(lines) != 1 {
			t.Fatalf("want one JSON object, got %q", out)
		}
		return lines[0]
	}
	sender := func(m map[string]any) map[string]any { return m["sender"].(map[string]any) }
	orgA, orgB := float64(a.OrgID), float64(b.OrgID)

	// A phone registered in two organizations needs --org.
	_, _, err = runCmd(t, "admin", "sender", "suspend", "--phone", owner)
	if err == nil || !strings.Contains(err.Error(), "several organizations") || !strings.Contains(err.Error(), "--org") {
		t.Fatalf("ambiguous suspend: %v", err)
	}
	_, _, err = runCmd(t, "admin", "sender", "suspend", "--phone", "+14155550199")
	if err == nil || !strings.Contains(err.Error(), "No sender number +14155550199") {
		t.Fatalf("unknown phone: %v", err)
	}
	_, _, err = runCmd(t, "admin", "sender", "suspend", "--phone", "12")
	if err == nil || !strings.Contains(err.Error(), "phone: must be a valid phone number") {
		t.Fatalf("bad phone: %v", err)
	}

	// suspend and unsuspend an active number: back to active.
	m := decode(mustRun(t, "admin", "sender", "suspend", "--phone", "+1 415 555 0101", "--org", itoa(a.OrgID), "--json"))
	if m["organization_id"] != orgA || m["previous_status"] != "active" || sender(m)["status"] != "suspended" ||
		sender(m)["phone"] != owner || sender(m)["id"] != float64(sa.ID) || sender(m)["verification_status"] != "verified" {
		t.Fatalf("suspend --json = %v", m)
	}
	_, _, err = runCmd(t, "admin", "sender", "suspend", "--phone", owner, "--org", itoa(a.OrgID))
	if err == nil || !strings.Contains(err.Error(), "already suspended") {
		t.Fatalf("suspend twice: %v", err)
	}
	out := mustRun(t, "admin", "sender", "unsuspend", "--phone", owner, "--org", itoa(a.OrgID))
	if want := "sender " + owner + " (id " + itoa(sa.ID) + ") of organization " + itoa(a.OrgID) + ": suspended -> active\n"; out != want {
		t.Fatalf("unsuspend = %q, want %q", out, want)
	}
	_, _, err = runCmd(t, "admin", "sender", "unsuspend", "--phone", owner, "--org", itoa(a.OrgID))
	if err == nil || !strings.Contains(err.Error(), "not suspended") {
		t.Fatalf("unsuspend active: %v", err)
	}

	// set-limit, then none.
	m = decode(mustRun(t, "admin", "sender", "set-limit", "--phone", owner, "--org", itoa(a.OrgID), "--limit", "250", "--json"))
	if sender(m)["daily_limit_override"] != float64(250) || sender(m)["status"] != "active" {
		t.Fatalf("set-limit --json = %v", m)
	}
	out = mustRun(t, "admin", "sender", "set-limit", "--phone", owner, "--org", itoa(a.OrgID), "--limit", "none")
	if !strings.HasSuffix(out, ": daily limit organization default (status active)\n") {
		t.Fatalf("set-limit none = %q", out)
	}

	// A phone registered once needs no --org; pending_verification suspends
	// and returns to pending_verification.
	m = decode(mustRun(t, "admin", "sender", "suspend", "--phone", solo, "--json"))
	if m["organization_id"] != orgB || m["previous_status"] != "pending_verification" {
		t.Fatalf("suspend solo = %v", m)
	}
	m = decode(mustRun(t, "admin", "sender", "unsuspend", "--phone", solo, "--json"))
	if sender(m)["status"] != "pending_verification" {
		t.Fatalf("unsuspend solo = %v", m)
	}

	// reject is final.
	m = decode(mustRun(t, "admin", "sender", "reject", "--phone", owner, "--org", itoa(a.OrgID), "--json"))
	if m["previous_status"] != "active" || sender(m)["status"] != "rejected" {
		t.Fatalf("reject --json = %v", m)
	}
	for _, cmd := range []string{"suspend", "unsuspend", "reject"} {
		_, _, err := runCmd(t, "admin", "sender", cmd, "--phone", owner, "--org", itoa(a.OrgID))
		if err == nil || !strings.Contains(err.Error(), "rejection is final") {
			t.Fatalf("%s after reject: %v", cmd, err)
		}
	}
	// The rejection released the phone: Beta's number is not blocked by it.
	var holders int
	if err := d.Pool.QueryRow(ctx, `SELECT count(*) FROM central.active_sender_phones WHERE phone = $1`, owner).Scan(&holders); err != nil || holders != 0 {
		t.Fatalf("claims on %s: %d %v", owner, holders, err)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// TestAdminCitusWithoutCitus runs the Citus commands on a plain PostgreSQL
// database: each says it is not a Citus coordinator. It sets the
// environment, so it does not run in parallel.
func TestAdminCitusWithoutCitus(t *testing.T) {
	_, dbURL := dbtest.Migrated(t)
	t.Setenv("DATABASE_URL", dbURL)
	t.Setenv("LOG_LEVEL", "warn")
	for _, args := range [][]string{
		{"admin", "citus", "where"},
		{"admin", "citus", "move", "--org", "1", "--node", "127.0.0.1:5432"},
		{"admin", "citus", "distribute"},
	} {
		_, _, err := runCmd(t, args...)
		if err == nil || !strings.Contains(err.Error(), "not a Citus coordinator") {
			t.Errorf("%v: err %v, want not a Citus coordinator", args, err)
		}
	}
}
