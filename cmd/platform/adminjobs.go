package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
	"github.com/uptrace/bun"

	"github.com/bizmsg/platform/platform/app"
	"github.com/bizmsg/platform/platform/config"
	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/messages"
	"github.com/bizmsg/platform/platform/queue"
)

// openApp assembles the service without workers or listeners, for the
// operator commands that read messages and jobs, on the database the
// service set up (app.Options.Operator: nothing created, migrated or
// written, no warning about development secrets).
func openApp(ctx context.Context, stderr io.Writer) (*app.App, error) {
	cfg, err := config.Load(os.Getenv)
	if err != nil {
		return nil, err
	}
	log := slog.New(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	return app.New(ctx, app.Options{Config: cfg, Logger: log, Operator: true, Name: "bizmsg operator"})
}

// orgSchema is the bun model of an organization's schema in
// central.organizations.
type orgSchema struct {
	bun.BaseModel `bun:"table:central.organizations,alias:o"`

	ID         int64   `bun:"id,pk"`
	SchemaName *string `bun:"schema_name"`
}

// tenantOf maps an organization id to its tenant.
func tenantOf(ctx context.Context, d *db.DB, orgID int64) (db.Tenant, error) {
	var o orgSchema
	err := d.Bun.NewSelect().Model(&o).Column("schema_name").Where("o.id = ?", orgID).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) || (err == nil && o.SchemaName == nil) {
		return db.Tenant{}, fmt.Errorf("no organization %d", orgID)
	}
	if err != nil {
		return db.Tenant{}, fmt.Errorf("organization %d: %w", orgID, err)
	}
	return db.NewTenant(orgID, *o.SchemaName)
}

// subcommand checks that args name the area's one command, want: help
// without it, an error naming any other.
func subcommand(args []string, area, want string, stderr io.Writer) error {
	if len(args) > 0 && args[0] == want {
		return nil
	}
	fmt.Fprint(stderr, adminUsage)
	if len(args) == 0 {
		return flag.ErrHelp
	}
	return fmt.Errorf("unknown admin %s command %q", area, args[0])
}

// orgItem is the target of an operator command that names one item of an
// organization (--id and --org), opened: the application and the
// organization's tenant. Its caller closes App.
type orgItem struct {
	ID, Org int64
	JSON    bool
	App     *app.App
	Tenant  db.Tenant
}

// openOrgItem parses `platform admin <area> <verb> --id N --org N [--json]`
// (item names what --id is; jsonHelp says what --json prints) and opens the
// application and the organization's tenant.
func openOrgItem(ctx context.Context, args []string, area, verb, item, jsonHelp string, stderr io.Writer) (orgItem, error) {
	if err := subcommand(args, area, verb, stderr); err != nil {
		return orgItem{}, err
	}
	name := "admin " + area + " " + verb
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	id := fs.Int64("id", 0, "the "+item+"'s id (required)")
	org := fs.Int64("org", 0, "the "+item+"'s organization id (required)")
	asJSON := fs.Bool("json", false, jsonHelp)
	if err := fs.Parse(args[1:]); err != nil {
		return orgItem{}, err
	}
	if *id <= 0 || *org <= 0 {
		return orgItem{}, errors.New(name + ": --id and --org are required positive integers")
	}
	a, err := openApp(ctx, stderr)
	if err != nil {
		return orgItem{}, err
	}
	t, err := tenantOf(ctx, a.DB, *org)
	if err != nil {
		a.Close()
		return orgItem{}, fmt.Errorf("%s: %w", name, err)
	}
	return orgItem{ID: *id, Org: *org, JSON: *asJSON, App: a, Tenant: t}, nil
}

// runAdminMessage runs `platform admin message show`.
func runAdminMessage(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	it, err := openOrgItem(ctx, args, "message", "show", "message",
		"print the message and its delivery job as one JSON object", stderr)
	if err != nil {
		return err
	}
	defer it.App.Close()
	a, t := it.App, it.Tenant
	m, err := a.Messages.Get(ctx, t, it.ID)
	if err != nil {
		return fmt.Errorf("admin message show: %w", cliError(err))
	}
	job, err := queue.DeliveryJobOf(ctx, a.River, it.Org, it.ID)
	if err != nil {
		return err
	}
	if it.JSON {
		return writeJSON(stdout, struct {
			Message messages.Message  `json:"message"`
			Job     *rivertype.JobRow `json:"job"`
		}{m, job})
	}
	printMessage(stdout, t, m, job)
	return nil
}

// printMessage writes a message and its delivery job for an operator: the
// job's River state and every attempt's full error.
func printMessage(w io.Writer, t db.Tenant, m messages.Message, job *rivertype.JobRow) {
	at := func(p *time.Time) string {
		if p == nil {
			return "-"
		}
		return p.UTC().Format(time.RFC3339)
	}
	fmt.Fprintf(w, "message %d of organization %d (%s)\n", m.ID, t.OrgID, t.Schema)
	fmt.Fprintf(w, "  status      %s\n", m.Status)
	if m.ErrorCode != nil {
		fmt.Fprintf(w, "  error       %s: %s\n", *m.ErrorCode, deref(m.ErrorMessage))
	}
	fmt.Fprintf(w, "  sender      %d\n  to          %s\n  type        %s\n", m.SenderNumberID, m.ToPhone, m.Type)
	fmt.Fprintf(w, "  created_at  %s\n  sent_at     %s\n  failed_at   %s\n",
		m.CreatedAt.UTC().Format(time.RFC3339), at(m.SentAt), at(m.FailedAt))
	if job == nil {
		fmt.Fprintln(w, "delivery job: none kept (River deletes completed jobs after a day, discarded ones after a week)")
		return
	}
	fmt.Fprintf(w, "delivery job %d (queue %s, state %s)\n", job.ID, job.Queue, job.State)
	fmt.Fprintf(w, "  attempts      %d of %d\n", job.Attempt, job.MaxAttempts)
	fmt.Fprintf(w, "  attempted_at  %s\n", at(job.AttemptedAt))
	fmt.Fprintf(w, "  scheduled_at  %s\n", job.ScheduledAt.UTC().Format(time.RFC3339))
	fmt.Fprintf(w, "  finalized_at  %s\n", at(job.FinalizedAt))
	for _, e := range job.Errors {
		fmt.Fprintf(w, "  error, attempt %d at %s: %s\n", e.Attempt, e.At.UTC().Format(time.RFC3339), e.Error)
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// jobKinds maps the kinds an operator names to River's.
var jobKinds = map[string]string{
	"deliver": queue.DeliverArgs{}.Kind(),
	"otp":     queue.OTPArgs{}.Kind(),
}

// runAdminJobs runs `platform admin jobs retry`.
func runAdminJobs(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if err := subcommand(args, "jobs", "retry", stderr); err != nil {
		return err
	}
	fs := flag.NewFlagSet("admin jobs retry", flag.ContinueOnError)
	fs.SetOutput(stderr)
	kind := fs.String("kind", "", "job kind: deliver or otp (required)")
	state := fs.String("state", "discarded", "jobs in this final state: discarded (attempts ran out) or cancelled")
	since := fs.String("since", "", "jobs that ended at or after this time: RFC 3339 (2026-11-25T08:00:00Z) or a duration back from now (2h) (required)")
	dryRun := fs.Bool("dry-run", false, "list what would be retried, change nothing")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	riverKind, ok := jobKinds[*kind]
	if !ok {
		return fmt.Errorf("admin jobs retry: --kind must be deliver or otp, got %q", *kind)
	}
	if *state != string(rivertype.JobStateDiscarded) && *state != string(rivertype.JobStateCancelled) {
		return fmt.Errorf("admin jobs retry: --state must be discarded or cancelled, got %q", *state)
	}
	from, err := parseSince(*since, time.Now())
	if err != nil {
		return fmt.Errorf("admin jobs retry: %w", err)
	}
	a, err := openApp(ctx, stderr)
	if err != nil {
		return err
	}
	defer a.Close()
	r := retrier{a: a, out: stdout, dryRun: *dryRun}
	params := river.NewJobListParams().Kinds(riverKind).States(rivertype.JobState(*state)).
		OrderBy(river.JobListOrderByFinalizedAt, river.SortOrderDesc).First(100)
	for {
		res, err := a.River.JobList(ctx, params)
		if err != nil {
			return fmt.Errorf("admin jobs retry: list jobs: %w", err)
		}
		for _, job := range res.Jobs {
			if job.FinalizedAt == nil || job.FinalizedAt.Before(from) {
				return r.summary(*kind)
			}
			if err := r.retry(ctx, job); err != nil {
				return fmt.Errorf("admin jobs retry: job %d: %w", job.ID, err)
			}
		}
		if len(res.Jobs) < 100 {
			return r.summary(*kind)
		}
		params = params.After(res.LastCursor)
	}
}

// parseSince reads --since: an RFC 3339 time, or a duration back from now.
func parseSince(v string, now time.Time) (time.Time, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return time.Time{}, errors.New("--since is required (an RFC 3339 time or a duration such as 2h)")
	}
	if t, err := time.Parse(time.RFC3339, v); err == nil {
		return t, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return time.Time{}, fmt.Errorf("--since must be an RFC 3339 time or a positive duration such as 2h, got %q", v)
	}
	return now.Add(-d), nil
}

// retrier retries jobs one by one and counts them.
type retrier struct {
	a             *app.App
	out           io.Writer
	dryRun        bool
	retried, kept int
}

// retry makes job available again. A delivery job's message is requeued in
// the same transaction (delivery.Service.Requeue); one whose message was
// refused for a reason of its own is left alone.
func (r *retrier) retry(ctx context.Context, job *rivertype.JobRow) error {
	var args queue.DeliverArgs
	deliver := job.Kind == (queue.DeliverArgs{}).Kind()
	if deliver {
		if err := json.Unmarshal(job.EncodedArgs, &args); err != nil {
			return fmt.Errorf("read arguments: %w", err)
		}
	}
	tx, err := r.a.DB.Pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	if deliver {
		t, err := args.Tenant()
		if err != nil {
			return err
		}
		ok, err := r.a.Delivery.Requeue(ctx, tx, t, args.MessageID)
		if err != nil {
			return err
		}
		if !ok {
			r.kept++
			fmt.Fprintf(r.out, "job %d: message %d of organization %d is not failed for lack of network; not retried\n",
				job.ID, args.MessageID, args.OrgID)
			return nil
		}
	}
	if _, err := r.a.River.JobRetryTx(ctx, tx, job.ID); err != nil {
		return err
	}
	if r.dryRun {
		fmt.Fprintf(r.out, "job %d: would retry\n", job.ID)
		r.retried++
		return nil
	}
	if err := tx.Commit(ctx); err != nil {
		return err
	}
	r.retried++
	fmt.Fprintf(r.out, "job %d: retried\n", job.ID)
	return nil
}

func (r *retrier) summary(kind string) error {
	verb := "retried"
	if r.dryRun {
		verb = "would retry"
	}
	fmt.Fprintf(r.out, "%s %d %s job(s); %d left alone\n", verb, r.retried, kind, r.kept)
	return nil
}
