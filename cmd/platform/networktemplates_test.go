package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/dbtest"
	"github.com/bizmsg/platform/platform/migrate"
	"github.com/bizmsg/platform/platform/queue"
	"github.com/bizmsg/platform/platform/templates"
)

// TestNetworkTemplateCommandErrors covers what fails before any database
// work.
func TestNetworkTemplateCommandErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args    []string
		wantErr string // "" for flag.ErrHelp
	}{
		{[]string{"network", "templates"}, ""},
		{[]string{"network", "templates", "reject", "-h"}, ""},
		{[]string{"network", "templates", "archive"}, `unknown network templates command "archive"`},
		{[]string{"network", "templates", "approve"}, "--id is required"},
		{[]string{"network", "templates", "pause", "--id", "-2"}, "--id is required"},
		{[]string{"network", "templates", "disable", "--id", "1", "--org", "-1"}, "--org must be a positive"},
		{[]string{"network", "templates", "approve", "--id", "1", "--reason", "x"}, "flag provided but not defined: -reason"},
		{[]string{"network", "templates", "list", "--status", "gone"}, `--status "gone"`},
	}
	for _, tt := range tests {
		_, _, err := runCmd(t, tt.args...)
		switch {
		case tt.wantErr == "" && !errors.Is(err, flag.ErrHelp):
			t.Errorf("%v: err = %v, want flag.ErrHelp", tt.args, err)
		case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
			t.Errorf("%v: err = %v, want it to contain %q", tt.args, err, tt.wantErr)
		}
	}
}

// TestNetworkTemplateCommands drives the template commands against a
// database with two organizations whose templates share an id, as the
// network's operator would. It sets the environment, so it does not run in
// parallel.
func TestNetworkTemplateCommands(t *testing.T) {
	d, dbURL := dbtest.Migrated(t)
	t.Setenv("DATABASE_URL", dbURL)
	t.Setenv("LOG_LEVEL", "warn")
	ctx := context.Background()
	quiet := slog.New(slog.NewJSONHandler(io.Discard, nil))
	mig, err := migrate.New(migrate.Config{Pool: d.Pool, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	org := func(name string) db.Tenant {
		var id int64
		if err := d.Pool.QueryRow(ctx, `INSERT INTO central.organizations (name, schema_name)
			VALUES ($1, 'tenant_' || currval('central.organizations_id_seq')) RETURNING id`, name).Scan(&id); err != nil {
			t.Fatal(err)
		}
		tn, _ := db.NewTenant(id, db.SchemaFor(id))
		if _, err := mig.Tenant(ctx, tn); err != nil {
			t.Fatal(err)
		}
		return tn
	}
	jobs, err := queue.NewSQLInserter(d.Bun.DB, quiet)
	if err != nil {
		t.Fatal(err)
	}
	svc, err := templates.New(templates.Config{DB: d, Jobs: jobs})
	if err != nil {
		t.Fatal(err)
	}
	create := func(tn db.Tenant, name string) templates.Template {
		body, lang, cat := "Hello {{1}}, welcome.", "en", "utility"
		tpl, err := svc.Create(ctx, tn, templates.Input{Name: &name, Language: &lang, Category: &cat, Body: &body,
			Examples: map[string]string{"1": "Ana"}})
		if err != nil {
			t.Fatal(err)
		}
		return tpl
	}
	a, b := org("Acme"), org("Beta")
	ta := create(a, "welcome")
	create(b, "hello")
	solo := create(b, "solo")

	list := jsonLines(t, mustRun(t, "network", "templates", "list", "--json"))
	if len(list) != 3 || list[0]["organization_id"] != float64(a.OrgID) {
		t.Fatalf("list --json = %v", list)
	}
	// Both organizations have template 1: the operator names one.
	if _, _, err := runCmd(t, "network", "templates", "approve", "--id", "1"); err == nil || !strings.Contains(err.Error(), "name the organization") {
		t.Fatalf("approve an ambiguous id: %v", err)
	}
	if _, _, err := runCmd(t, "network", "templates", "approve", "--id", "9"); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Fatalf("approve an unknown id: %v", err)
	}
	out := mustRun(t, "network", "templates", "approve", "--id", "1", "--org", itoa(a.OrgID))
	if out != "template 1 welcome (en) of organization "+itoa(a.OrgID)+": approved\n" {
		t.Fatalf("approve = %q", out)
	}
	if out := mustRun(t, "network", "templates", "approve", "--id", "1", "--org", itoa(a.OrgID)); !strings.HasSuffix(out, "approved (unchanged)\n") {
		t.Fatalf("approve again = %q", out)
	}
	// Template 2 is only Beta's: no --org needed.
	var got struct {
		OrgID    int64 `json:"organization_id"`
		Template struct {
			Status string `json:"status"`
		} `json:"template"`
	}
	raw := mustRun(t, "network", "templates", "reject", "--id", itoa(solo.ID), "--reason", "Too vague.", "--json")
	if err := json.Unmarshal([]byte(raw), &got); err != nil || got.OrgID != b.OrgID || got.Template.Status != "rejected" {
		t.Fatalf("reject --json = %s (%v)", raw, err)
	}
	if tpl, _ := svc.Get(ctx, b, solo.ID); tpl.RejectedReason != "Too vague." {
		t.Fatalf("rejected_reason %q", tpl.RejectedReason)
	}
	mustRun(t, "network", "templates", "pause", "--id", "1", "--org", itoa(a.OrgID))
	mustRun(t, "network", "templates", "disable", "--id", "1", "--org", itoa(a.OrgID))
	if tpl, _ := svc.Get(ctx, a, ta.ID); tpl.Status != templates.StatusDisabled {
		t.Fatalf("after pause and disable: %s", tpl.Status)
	}
	table := mustRun(t, "network", "templates", "list", "--org", itoa(b.OrgID), "--status", "rejected")
	if !strings.Contains(table, "solo") || strings.Contains(table, "hello") || !strings.Contains(table, "Too vague.") {
		t.Fatalf("list --org --status =\n%s", table)
	}
}
