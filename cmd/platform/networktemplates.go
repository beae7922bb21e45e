package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/queue"
	"github.com/bizmsg/platform/platform/templates"
	"github.com/bizmsg/platform/platform/webhooks"
)

const networkTemplatesUsage = `Usage: platform network templates <command> [flags]

Review organizations' message templates as the messaging network's operator
(docs/api.md, §Templates). The built-in network reviews each new template
within seconds; these commands change any template to any state, each change
sending template.status_changed to the organization's webhooks.

Commands:
  list      print the templates (--org ORG, --status S to narrow)
  approve   --id N [--org ORG] [--json]
  reject    --id N [--org ORG] [--reason R] [--json]
  pause     --id N [--org ORG] [--json]
  disable   --id N [--org ORG] [--json]

Template ids are per organization: --org is needed when several
organizations have a template with the id.
`

// networkTemplates runs `platform network templates <command>`.
func networkTemplates(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	set := func(status templates.Status) command {
		return func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
			return networkTemplateSet(ctx, args, stdout, stderr, status)
		}
	}
	return dispatch(ctx, args, stdout, stderr, networkTemplatesUsage, "network templates command", map[string]command{
		"list":    networkTemplateList,
		"approve": set(templates.StatusApproved),
		"reject":  set(templates.StatusRejected),
		"pause":   set(templates.StatusPaused),
		"disable": set(templates.StatusDisabled),
	})
}

// verbs names the command of each status.
var verbs = map[templates.Status]string{
	templates.StatusApproved: "approve", templates.StatusRejected: "reject",
	templates.StatusPaused: "pause", templates.StatusDisabled: "disable",
}

func networkTemplateSet(ctx context.Context, args []string, stdout, stderr io.Writer, status templates.Status) error {
	verb := verbs[status]
	synopsis := "--id N [--org ORG] [--json]"
	if status == templates.StatusRejected {
		synopsis = "--id N [--org ORG] [--reason R] [--json]"
	}
	fs := networkFlags("templates "+verb, synopsis,
		"Set the template's status to "+string(status)+", from any status.", stderr)
	id := fs.Int64("id", 0, "the template's id; required")
	org := fs.Int64("org", 0, "the organization's id, when several have a template with this id")
	var reason *string
	if status == templates.StatusRejected {
		reason = fs.String("reason", "", "why, shown to the organization as rejected_reason (default: "+templates.DefaultRejectedReason+")")
	}
	asJSON := fs.Bool("json", false, "print the template as JSON")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *id <= 0 {
		return errors.New("--id is required (a positive template id)")
	}
	if *org < 0 {
		return errors.New("--org must be a positive organization id")
	}
	why := ""
	if reason != nil {
		why = *reason
	}
	return withTemplates(ctx, stderr, func(svc *templates.Service, emit *webhooks.Service, tenants []db.Tenant) error {
		t, err := pickTenant(ctx, svc, tenants, *id, *org)
		if err != nil {
			return fmt.Errorf("network templates %s: %w", verb, cliError(err))
		}
		tpl, changed, err := svc.SetStatus(ctx, t, *id, status, why)
		if err != nil {
			return fmt.Errorf("network templates %s: %w", verb, cliError(err))
		}
		if changed {
			// Turn the event into deliveries now: this process ends soon.
			if _, err := emit.ExpandOutbox(ctx, t); err != nil {
				return fmt.Errorf("network templates %s: webhook events: %w", verb, err)
			}
		}
		if *asJSON {
			return writeJSON(stdout, templates.Located{OrgID: t.OrgID, Template: tpl})
		}
		state := string(tpl.Status)
		if !changed {
			state += " (unchanged)"
		}
		_, err = fmt.Fprintf(stdout, "template %d %s (%s) of organization %d: %s\n", tpl.ID, tpl.Name, tpl.Language, t.OrgID, state)
		return err
	})
}

// pickTenant returns the tenant of organization org, or, with org 0, the
// one tenant holding template id.
func pickTenant(ctx context.Context, svc *templates.Service, tenants []db.Tenant, id, org int64) (db.Tenant, error) {
	if org == 0 {
		return svc.Locate(ctx, tenants, id)
	}
	for _, t := range tenants {
		if t.OrgID == org {
			return t, nil
		}
	}
	return db.Tenant{}, fmt.Errorf("no organization %d", org)
}

func networkTemplateList(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := networkFlags("templates list", "[--org ORG] [--status S] [--json]",
		"Print the templates of every organization (or of --org), by organization, oldest first.", stderr)
	org := fs.Int64("org", 0, "only this organization's templates")
	status := fs.String("status", "", "only templates in this status: pending, approved, rejected, paused or disabled")
	asJSON := fs.Bool("json", false, "print one JSON object a line")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *status != "" && verbs[templates.Status(*status)] == "" && templates.Status(*status) != templates.StatusPending {
		return fmt.Errorf("--status %q: must be pending, approved, rejected, paused or disabled", *status)
	}
	return withTemplates(ctx, stderr, func(svc *templates.Service, _ *webhooks.Service, tenants []db.Tenant) error {
		if *org != 0 {
			t, err := pickTenant(ctx, svc, tenants, 0, *org)
			if err != nil {
				return err
			}
			tenants = []db.Tenant{t}
		}
		list, err := svc.ListAll(ctx, tenants, templates.Status(*status))
		if err != nil {
			return err
		}
		if *asJSON {
			for _, l := range list {
				if err := writeJSON(stdout, l); err != nil {
					return err
				}
			}
			return nil
		}
		if len(list) == 0 {
			_, err := fmt.Fprintln(stdout, "no templates")
			return err
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ORG\tID\tNAME\tLANGUAGE\tCATEGORY\tSTATUS\tREASON")
		for _, l := range list {
			tpl := l.Template
			fmt.Fprintf(tw, "%d\t%d\t%s\t%s\t%s\t%s\t%s\n", l.OrgID, tpl.ID, tpl.Name, tpl.Language, tpl.Category, tpl.Status, tpl.RejectedReason)
		}
		return tw.Flush()
	})
}

// withTemplates opens the database (app.OpenExisting) and runs f with the
// template service, the webhook service its changes emit events through,
// and the organizations' tenants.
func withTemplates(ctx context.Context, stderr io.Writer,
	f func(*templates.Service, *webhooks.Service, []db.Tenant) error) error {
	d, m, log, err := openOperator(ctx, stderr)
	if err != nil {
		return err
	}
	defer d.Close()
	// The services insert jobs (webhook deliveries) through River; the
	// command works none, so an insert-only client (no workers) does.
	rc, err := queue.NewClient(queue.Config{Pool: d.Pool, Logger: log})
	if err != nil {
		return err
	}
	emit, err := webhooks.New(webhooks.Config{DB: d, Jobs: rc, Logger: log})
	if err != nil {
		return err
	}
	defer emit.Close()
	jobs, err := queue.NewSQLInserter(d.Bun.DB, log)
	if err != nil {
		return err
	}
	svc, err := templates.New(templates.Config{DB: d, Jobs: jobs, Events: emit})
	if err != nil {
		return err
	}
	tenants, err := m.Tenants(ctx)
	if err != nil {
		return err
	}
	return f(svc, emit, tenants)
}
