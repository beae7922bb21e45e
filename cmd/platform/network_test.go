package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/bizmsg/platform/platform/dbtest"
	"github.com/bizmsg/platform/platform/network"
	"github.com/bizmsg/platform/platform/network/builtin"
	"github.com/bizmsg/platform/platform/network/networktest"
)

// runCmd runs the binary's run in-process and returns stdout, stderr and the error.
func runCmd(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err := run(ctx, args, &stdout, &stderr)
	return stdout.String(), stderr.String(), err
}

// mustRun runs args and fails the test if they fail.
func mustRun(t *testing.T, args ...string) string {
	t.Helper()
	out, errOut, err := runCmd(t, args...)
	if err != nil {
		t.Fatalf("platform %s: %v\nstderr: %s", strings.Join(args, " "), err, errOut)
	}
	return out
}

// jsonLines decodes every line of out as a JSON object.
func jsonLines(t *testing.T, out string) []map[string]any {
	t.Helper()
	var objs []map[string]any
	for line := range strings.Lines(out) {
		var o map[string]any
		if err := json.Unmarshal([]byte(line), &o); err != nil {
			t.Fatalf("line %q is not a JSON object: %v", line, err)
		}
		objs = append(objs, o)
	}
	return objs
}

// recordingSink records what Drain gives it.
type recordingSink struct {
	receipts []network.Receipt
	inbound  []network.Inbound
	verdicts []network.TemplateVerdict
}

func (s *recordingSink) TemplateReviewed(_ context.Context, v network.TemplateVerdict) error {
	s.verdicts = append(s.verdicts, v)
	return nil
}

func (s *recordingSink) Receipt(_ context.Context, r network.Receipt) error {
	s.receipts = append(s.receipts, r)
	return nil
}

func (s *recordingSink) Inbound(_ context.Context, m network.Inbound) error {
	s.inbound = append(s.inbound, m)
	return nil
}

// TestNetworkCommandErrors covers what fails before any database work: help,
// unknown commands, missing and malformed flags.
func TestNetworkCommandErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		args       []string
		wantErr    string // substring of the error; "" for flag.ErrHelp
		wantStderr []string
	}{
		{"no command", []string{"network"}, "", []string{"Usage: platform network <command>", "add-account", "inbox"}},
		{"unknown command", []string{"network", "delete-account"}, `unknown network command "delete-account"`, []string{"Usage: platform network"}},
		{"add-account help", []string{"network", "add-account", "-h"}, "",
			[]string{"Usage: platform network add-account --phone P", "-phone", "-unverified", "-phone-unverified", "-receiving-disabled", "-json"}},
		{"verify-account help", []string{"network", "verify-account", "-h"}, "", []string{"verify-account --phone P", "-phone", "-json"}},
		{"block help", []string{"network", "block", "-h"}, "", []string{"block --phone RECIPIENT --sender SENDER_PHONE", "-sender"}},
		{"unblock help", []string{"network", "unblock", "-h"}, "", []string{"unblock --phone RECIPIENT", "-sender"}},
		{"inbox help", []string{"network", "inbox", "-h"}, "", []string{"inbox --phone P", "-last", "-json", "newest last"}},
		{"read help", []string{"network", "read", "-h"}, "", []string{"read --phone RECIPIENT [--sender SENDER_PHONE]", "-sender", "-json"}},
		{"send help", []string{"network", "send", "-h"}, "", []string{"send --from PHONE --to PHONE --text TEXT", "-from", "-to", "-text", "-json"}},
		{"read without phone", []string{"network", "read", "--sender", "+14155550001"}, "--phone is required", nil},
		{"read malformed sender", []string{"network", "read", "--phone", "+14155550001", "--sender", "me"}, `--sender "me"`, nil},
		{"send without from", []string{"network", "send", "--to", "+14155550001", "--text", "hi"}, "--from is required", nil},
		{"send without to", []string{"network", "send", "--from", "+14155550001", "--text", "hi"}, "--to is required", nil},
		{"send malformed to", []string{"network", "send", "--from", "+14155550001", "--to", "12", "--text", "hi"}, `--to "12"`, nil},
		{"send without text", []string{"network", "send", "--from", "+14155550001", "--to", "+14155550002"}, "--text is required", nil},
		{"missing phone", []string{"network", "add-account"}, "--phone is required", nil},
		{"malformed phone", []string{"network", "add-account", "--phone", "0100 123"}, `--phone "0100 123": must be a valid phone number`, nil},
		{"malformed verify phone", []string{"network", "verify-account", "--phone", "+1"}, `--phone "+1": must be a valid phone number`, nil},
		{"missing sender", []string{"network", "block", "--phone", "+14155550001"}, "--sender is required", nil},
		{"malformed sender", []string{"network", "block", "--phone", "+14155550001", "--sender", "abc"}, `--sender "abc"`, nil},
		{"malformed inbox phone", []string{"network", "inbox", "--phone", "inbox"}, `--phone "inbox"`, nil},
		{"negative last", []string{"network", "inbox", "--phone", "+14155550001", "--last", "-1"}, "--last must be 0 or more", nil},
		{"positional argument", []string{"network", "inbox", "--phone", "+14155550001", "extra"}, `unexpected argument "extra"`, nil},
		{"unknown flag", []string{"network", "inbox", "--phone", "+14155550001", "--all"}, "flag provided but not defined: -all", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			out, errOut, err := runCmd(t, tt.args...)
			switch {
			case tt.wantErr == "" && !errors.Is(err, flag.ErrHelp):
				t.Fatalf("err = %v, want flag.ErrHelp", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("err = %v, want it to contain %q", err, tt.wantErr)
			}
			if out != "" {
				t.Errorf("stdout = %q, want nothing", out)
			}
			for _, s := range tt.wantStderr {
				if !strings.Contains(errOut, s) {
					t.Errorf("stderr lacks %q:\n%s", s, errOut)
				}
			}
		})
	}

	out := mustRun(t, "network", "help")
	if !strings.Contains(out, "verify-account") {
		t.Errorf("network help = %q", out)
	}
}

// TestNetworkCommands runs the operator commands against a database named by
// DATABASE_URL, as an operator would: first one that does not exist and an
// empty one (refused, with what to do, and nothing created or migrated),
// then the database platform migrate set up. It sets the environment, so it
// does not run in parallel.
func TestNetworkCommands(t *testing.T) {
	dbURL := dbtest.NewDatabase(t)
	t.Setenv("LOG_LEVEL", "warn")
	const (
		alice = "+14155550001"
		bob   = "+14155550002"
		carol = "+14155550003"
	)

	// A database that does not exist is not created.
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	missing := strings.TrimPrefix(u.Path, "/") + "_missing"
	u.Path = "/" + missing
	t.Setenv("DATABASE_URL", u.String())
	if _, _, err := runCmd(t, "network", "inbox", "--phone", alice); err == nil ||
		!strings.Contains(err.Error(), missing) || !strings.Contains(err.Error(), "does not exist") || !strings.Contains(err.Error(), "DATABASE_URL") {
		t.Fatalf("an operator command on a database that does not exist: %v, want a refusal naming it and DATABASE_URL", err)
	}
	probe := dbtest.Open(t, dbURL)
	var created bool
	if err := probe.Pool.QueryRow(context.Background(), `SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)`, missing).Scan(&created); err != nil || created {
		t.Fatalf("the operator command created database %s (%v)", missing, err)
	}
	// An empty database is not migrated.
	t.Setenv("DATABASE_URL", dbURL)
	if _, _, err := runCmd(t, "network", "add-account", "--phone", alice); err == nil || !strings.Contains(err.Error(), "platform migrate") {
		t.Fatalf("an operator command on an empty database: %v, want a refusal naming platform migrate", err)
	}
	var schemas int
	if err := probe.Pool.QueryRow(context.Background(), `SELECT count(*) FROM pg_namespace WHERE nspname IN ('central', 'network', 'river')`).Scan(&schemas); err != nil || schemas != 0 {
		t.Fatalf("the operator command migrated the empty database: %d schemas (%v)", schemas, err)
	}
	mustRun(t, "migrate")

	// add-account creates a reachable, verified account by default.
	acc := jsonLines(t, mustRun(t, "network", "add-account", "--phone", "+1 (415) 555-0001", "--json"))
	if len(acc) != 1 || acc[0]["phone"] != alice || acc[0]["verified"] != true || acc[0]["phone_verified"] != true ||
		acc[0]["receiving_enabled"] != true || acc[0]["verified_at"] == nil || acc[0]["phone_verified_at"] == nil || acc[0]["id"] == nil {
		t.Fatalf("add-account --json = %v", acc)
	}
	aliceID := acc[0]["id"]

	out := mustRun(t, "network", "add-account", "--phone", bob, "--unverified", "--phone-unverified", "--receiving-disabled")
	if !strings.HasPrefix(out, "account "+bob+" (id ") || !strings.HasSuffix(out, "): not verified, phone not verified, receiving disabled\n") {
		t.Fatalf("add-account = %q", out)
	}
	// Adding again updates the same account.
	acc = jsonLines(t, mustRun(t, "network", "add-account", "--phone", alice, "--receiving-disabled", "--json"))
	if acc[0]["id"] != aliceID || acc[0]["receiving_enabled"] != false || acc[0]["verified"] != true {
		t.Fatalf("add-account update --json = %v", acc)
	}
	mustRun(t, "network", "add-account", "--phone", alice)
	mustRun(t, "network", "add-account", "--phone", carol)

	// verify-account verifies the owner only.
	acc = jsonLines(t, mustRun(t, "network", "verify-account", "--phone", bob, "--json"))
	if acc[0]["phone"] != bob || acc[0]["verified"] != true || acc[0]["verified_at"] == nil ||
		acc[0]["phone_verified"] != false || acc[0]["phone_verified_at"] != nil {
		t.Fatalf("verify-account --json = %v", acc)
	}
	if _, err := time.Parse(time.RFC3339, acc[0]["verified_at"].(string)); err != nil {
		t.Fatalf("verified_at: %v", err)
	}
	if out := mustRun(t, "network", "verify-account", "--phone", carol); !strings.HasSuffix(out, "): verified, phone verified, receiving\n") {
		t.Fatalf("verify-account = %q", out)
	}

	// block and unblock.
	if out := mustRun(t, "network", "block", "--phone", carol, "--sender", bob); out != carol+" blocks "+bob+"\n" {
		t.Fatalf("block = %q", out)
	}
	blk := jsonLines(t, mustRun(t, "network", "block", "--phone", carol, "--sender", "+1 415 555 0001", "--json"))
	if len(blk) != 1 || blk[0]["phone"] != carol || blk[0]["sender"] != alice || blk[0]["blocked"] != true {
		t.Fatalf("block --json = %v", blk)
	}
	if out := mustRun(t, "network", "unblock", "--phone", carol, "--sender", alice); out != carol+" no longer blocks "+alice+"\n" {
		t.Fatalf("unblock = %q", out)
	}

	// What the commands did is what the network sees.
	d := dbtest.Open(t, dbURL)
	nw := networktest.Builtin(t, builtin.Config{DB: d})
	ctx := context.Background()
	if a, err := nw.Lookup(ctx, carol, bob); err != nil || !a.BlocksSender {
		t.Fatalf("Lookup(carol, bob) = %+v, %v; want blocked", a, err)
	}
	if a, err := nw.Lookup(ctx, carol, alice); err != nil || a.BlocksSender {
		t.Fatalf("Lookup(carol, alice) = %+v, %v; want not blocked", a, err)
	}

	// inbox: empty, then the messages newest last.
	if out := mustRun(t, "network", "inbox", "--phone", carol); out != "no messages for "+carol+"\n" {
		t.Fatalf("empty inbox = %q", out)
	}
	if out := mustRun(t, "network", "inbox", "--phone", carol, "--json"); out != "" {
		t.Fatalf("empty inbox --json = %q", out)
	}
	for _, m := range []network.Message{
		{Reference: "otp:1", ToPhone: carol, Media: network.Media{Type: "text", Content: "Your Acme verification code is 123456."}},
		{Reference: "t:1", FromPhone: alice, ToPhone: carol, Media: network.Media{Type: "text", Content: "two\nlines"}},
		{Reference: "t:2", FromPhone: carol, ToPhone: alice, Media: network.Media{Type: "text", Content: "not for carol"}},
		{Reference: "t:3", FromPhone: alice, ToPhone: carol, Media: network.Media{Type: "document", Content: "https://files.example/a.pdf", FileName: "a.pdf", FileSize: 1024, FileType: "application/pdf"}},
	} {
		if _, err := nw.Deliver(ctx, m); err != nil {
			t.Fatalf("Deliver %s: %v", m.Reference, err)
		}
	}

	lines := jsonLines(t, mustRun(t, "network", "inbox", "--phone", carol, "--json"))
	want := []struct{ from, typ, content string }{
		{builtin.ServicePhone, "text", "Your Acme verification code is 123456."},
		{alice, "text", "two\nlines"},
		{alice, "document", "https://files.example/a.pdf"},
	}
	if len(lines) != len(want) {
		t.Fatalf("inbox --json has %d lines, want %d: %v", len(lines), len(want), lines)
	}
	for i, w := range want {
		l := lines[i]
		if l["from_phone"] != w.from || l["type"] != w.typ || l["content"] != w.content || l["reference"] == nil ||
			l["message_id"] == nil || l["conversation_id"] == nil {
			t.Errorf("inbox line %d = %v, want from %s type %s content %q", i, l, w.from, w.typ, w.content)
		}
		if _, err := time.Parse(time.RFC3339, l["created_at"].(string)); err != nil {
			t.Errorf("inbox line %d created_at: %v", i, err)
		}
		// Stored in the inbox is delivered at once; nothing is read yet.
		if l["to_phone"] != carol || l["receipt"] != network.ReceiptDelivered || l["delivered_at"] != l["created_at"] {
			t.Errorf("inbox line %d = %v, want to %s, delivered at created_at", i, l, carol)
		}
		if readAt, ok := l["read_at"]; !ok || readAt != nil {
			t.Errorf("inbox line %d read_at = %v (present %v), want null", i, readAt, ok)
		}
	}
	if lines[2]["file_name"] != "a.pdf" || lines[2]["file_size"] != float64(1024) || lines[2]["file_type"] != "application/pdf" {
		t.Errorf("document line = %v", lines[2])
	}
	if _, ok := lines[0]["file_name"]; ok {
		t.Errorf("text line has file fields: %v", lines[0])
	}

	out = mustRun(t, "network", "inbox", "--phone", carol)
	rows := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(rows) != 4 || !strings.HasPrefix(rows[0], "CREATED_AT") || !strings.Contains(rows[0], "FROM") || !strings.Contains(rows[0], "RECEIPT") {
		t.Fatalf("inbox = %q", out)
	}
	for i, w := range []struct{ from, typ, content string }{
		{builtin.ServicePhone, "text", "Your Acme verification code is 123456."},
		{alice, "text", "two lines"},
		{alice, "document", "https://files.example/a.pdf (a.pdf, application/pdf, 1024 bytes)"},
	} {
		row := rows[i+1]
		f := strings.Fields(row)
		if len(f) < 5 || f[1] != w.from || f[2] != w.typ || f[3] != network.ReceiptDelivered || !strings.HasSuffix(row, "  "+w.content) {
			t.Errorf("inbox row %d = %q, want from %s, type %s, content %q", i+1, row, w.from, w.typ, w.content)
		}
		if _, err := time.Parse(time.RFC3339, f[0]); err != nil {
			t.Errorf("inbox row %d time: %v", i+1, err)
		}
	}
	lines = jsonLines(t, mustRun(t, "network", "inbox", "--phone", carol, "--last", "1", "--json"))
	if len(lines) != 1 || lines[0]["type"] != "document" {
		t.Fatalf("inbox --last 1 = %v", lines)
	}

	// read: carol reads alice's messages, then the rest; reading again reads
	// nothing.
	lines = jsonLines(t, mustRun(t, "network", "read", "--phone", carol, "--sender", alice, "--json"))
	if len(lines) != 2 {
		t.Fatalf("read --sender alice --json = %v, want alice's two messages", lines)
	}
	for i, l := range lines {
		if l["from_phone"] != alice || l["to_phone"] != carol || l["receipt"] != network.ReceiptRead || l["read_at"] == nil {
			t.Errorf("read line %d = %v, want alice's message, read", i, l)
		}
		if _, err := time.Parse(time.RFC3339, l["read_at"].(string)); err != nil {
			t.Errorf("read line %d read_at: %v", i, err)
		}
	}
	if out := mustRun(t, "network", "read", "--phone", carol, "--sender", alice); out != "no unread messages for "+carol+" from "+alice+"\n" {
		t.Fatalf("read again = %q", out)
	}
	out = mustRun(t, "network", "read", "--phone", carol)
	if rows := strings.Split(strings.TrimSuffix(out, "\n"), "\n"); len(rows) != 2 || !strings.Contains(rows[0], "RECEIPT") ||
		strings.Fields(rows[1])[1] != builtin.ServicePhone || strings.Fields(rows[1])[3] != network.ReceiptRead {
		t.Fatalf("read = %q, want the OTP, read", out)
	}
	if out := mustRun(t, "network", "read", "--phone", carol, "--json"); out != "" {
		t.Fatalf("read with nothing unread --json = %q", out)
	}
	if out := mustRun(t, "network", "read", "--phone", carol); out != "no unread messages for "+carol+"\n" {
		t.Fatalf("read with nothing unread = %q", out)
	}
	for i, l := range jsonLines(t, mustRun(t, "network", "inbox", "--phone", carol, "--json")) {
		if l["receipt"] != network.ReceiptRead || l["read_at"] == nil {
			t.Errorf("inbox line %d after read = %v", i, l)
		}
	}
	if out := mustRun(t, "network", "inbox", "--phone", carol); strings.Count(out, " "+network.ReceiptRead+" ") != 3 {
		t.Errorf("inbox after read = %q, want three read", out)
	}

	// send: carol answers alice in their conversation.
	sent := jsonLines(t, mustRun(t, "network", "send", "--from", carol, "--to", "+1 415 555 0001", "--text", "Thanks, got it", "--json"))
	if len(sent) != 1 || sent[0]["from_phone"] != carol || sent[0]["to_phone"] != alice || sent[0]["type"] != "text" ||
		sent[0]["content"] != "Thanks, got it" || sent[0]["conversation_id"] != lines[0]["conversation_id"] ||
		sent[0]["reference"] != fmt.Sprintf("net:%v", sent[0]["message_id"]) || sent[0]["receipt"] != network.ReceiptDelivered ||
		sent[0]["read_at"] != nil {
		t.Fatalf("send --json = %v; want carol's text to alice in conversation %v", sent, lines[0]["conversation_id"])
	}
	out = mustRun(t, "network", "send", "--from", alice, "--to", carol, "--text", "You're welcome")
	if !strings.HasPrefix(out, alice+" wrote to "+carol+": message ") ||
		!strings.Contains(out, fmt.Sprintf(" in conversation %v, reference net:", sent[0]["conversation_id"])) {
		t.Fatalf("send = %q", out)
	}
	if l := jsonLines(t, mustRun(t, "network", "inbox", "--phone", alice, "--last", "1", "--json")); len(l) != 1 || l[0]["content"] != "Thanks, got it" {
		t.Fatalf("alice's inbox = %v", l)
	}

	// What read and send did waits in the network's outbox for the platform.
	var sink recordingSink
	if n, err := nw.Drain(ctx, &sink, 0); n != 5 || err != nil {
		t.Fatalf("Drain = %d, %v; want 3 read receipts and 2 inbound messages", n, err)
	}
	if len(sink.receipts) != 3 || len(sink.inbound) != 2 || sink.inbound[0].FromPhone != carol ||
		sink.inbound[0].Content != "Thanks, got it" || sink.inbound[1].FromPhone != alice {
		t.Fatalf("drained receipts %+v, inbound %+v", sink.receipts, sink.inbound)
	}

	// Errors from the network: exit with a message, print nothing.
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"network", "verify-account", "--phone", "+14155550009"}, "no account for this phone"},
		{[]string{"network", "inbox", "--phone", "+14155550009"}, "no account for this phone"},
		{[]string{"network", "block", "--phone", carol, "--sender", "+14155550009"}, "sender +14155550009: network: no account for this phone"},
		{[]string{"network", "block", "--phone", "+14155550009", "--sender", carol}, "recipient +14155550009: network: no account for this phone"},
		{[]string{"network", "block", "--phone", carol, "--sender", carol}, "cannot block itself"},
		{[]string{"network", "read", "--phone", "+14155550009"}, "no account for this phone"},
		{[]string{"network", "read", "--phone", carol, "--sender", "+14155550009"}, "sender +14155550009: network: no account for this phone"},
		{[]string{"network", "send", "--from", "+14155550009", "--to", carol, "--text", "hi"}, network.CodeSenderNotRegistered},
		{[]string{"network", "send", "--from", carol, "--to", "+14155550009", "--text", "hi"}, network.CodeNotRegistered},
		{[]string{"network", "send", "--from", carol, "--to", carol, "--text", "hi"}, network.CodeSelf},
		{[]string{"network", "send", "--from", alice, "--to", bob, "--text", "hi"}, network.CodePhoneUnverified},
		{[]string{"network", "send", "--from", bob, "--to", carol, "--text", "hi"}, network.CodeBlockedSender},
	} {
		out, _, err := runCmd(t, tt.args...)
		if err == nil || !strings.Contains(err.Error(), tt.want) || out != "" {
			t.Errorf("%v: out %q, err %v; want an error containing %q", tt.args, out, err, tt.want)
		}
	}
}
