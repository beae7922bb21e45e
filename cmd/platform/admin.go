package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/bizmsg/platform/platform/apperr"
	"github.com/bizmsg/platform/platform/config"
	"github.com/bizmsg/platform/platform/network/builtin"
	"github.com/bizmsg/platform/platform/queue"
	"github.com/bizmsg/platform/platform/senders"
)

const adminUsage = `Usage: platform admin <area> <command> [flags]

Operator commands on the database named by DATABASE_URL.

Sender numbers:
  sender suspend    --phone P [--org ORG_ID] [--json]
                    suspend a number (it cannot send until unsuspended)
  sender unsuspend  --phone P [--org ORG_ID] [--json]
                    lift a suspension: the number returns to the state its
                    verification facts give (OTP accepted? owner verified?)
  sender reject     --phone P [--org ORG_ID] [--json]
                    reject a number for good (rejection is final)
  sender set-limit  --phone P --limit N|none [--org ORG_ID] [--json]
                    set the number's daily message limit; none restores the
                    organization's default

--org is needed only when the phone is registered in several organizations.
Run 'platform admin sender <command> -h' for the flags.

Messages and jobs:
  message show  --id N --org ORG_ID [--json]
                print a message with its delivery job: River state,
                attempts, every attempt's error
  campaign explain  --id N --org ORG_ID [--json]
                why a campaign releases what it does: its state and
                counts, what it waits for, each pool sender's room now
                (rate, in flight, daily allowance past the reserve, why
                zero) and its release job (next tick, failed ticks)
  jobs retry    --kind deliver|otp --since T [--state discarded|cancelled]
                [--dry-run]
                retry the jobs of that kind that ended in that state
                (default discarded: attempts ran out) at or after T (RFC
                3339, or a duration back from now such as 2h); a delivery's
                message that failed with network_error is queued again
                in the same transaction, one refused for its own reason is
                left alone

Citus (docs/scaling.md):
  citus distribute  [--json]
                distribute every tenant schema still on the coordinator
                (citus_schema_distribute), one at a time
  citus where       [--json]
                the worker node holding each organization's tenant schema
  citus move    --org ORG_ID --node HOST:PORT [--json]
                move the organization's tenant schema to that worker
                (citus_schema_move, logical replication: its sends go on)
`

// runAdmin runs `platform admin <area> <command>`.
func runAdmin(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return dispatch(ctx, args, stdout, stderr, adminUsage, "admin area", map[string]command{
		"sender":   runAdminSender,
		"message":  runAdminMessage,
		"campaign": runAdminCampaign,
		"jobs":     runAdminJobs,
		"citus":    runAdminCitus,
	})
}

// adminSenderCommands are the sender commands, with what -h says of each.
var adminSenderCommands = map[string]string{
	"suspend":   "Suspend the sender number: it cannot send until unsuspended.",
	"unsuspend": "Lift the suspension: the number returns to active, pending_account_verification or pending_verification, as its verification facts give.",
	"reject":    "Reject the sender number for good; rejection is final.",
	"set-limit": "Set the sender number's daily message limit (--limit none restores the organization's default).",
}

func runAdminSender(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, adminUsage)
		return flag.ErrHelp
	}
	cmd, rest := args[0], args[1:]
	about, ok := adminSenderCommands[cmd]
	if !ok {
		if cmd == "help" || cmd == "-h" || cmd == "--help" {
			fmt.Fprint(stdout, adminUsage)
			return nil
		}
		fmt.Fprint(stderr, adminUsage)
		return fmt.Errorf("unknown admin sender command %q", cmd)
	}
	synopsis := "--phone P [--org ORG_ID] [--json]"
	if cmd == "set-limit" {
		synopsis = "--phone P --limit N|none [--org ORG_ID] [--json]"
	}
	fs := flag.NewFlagSet("admin sender "+cmd, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: platform admin sender %s %s\n\n%s\n\nFlags:\n", cmd, synopsis, about)
		fs.PrintDefaults()
	}
	phoneFlag := fs.String("phone", "", "the sender number's phone, international format (required)")
	org := fs.Int64("org", 0, "organization id, when the phone is registered in several organizations")
	asJSON := fs.Bool("json", false, "print the result as one JSON object")
	var limitFlag *string
	if cmd == "set-limit" {
		limitFlag = fs.String("limit", "", "messages per UTC day, an integer ≥ 1, or none for the organization default (required)")
	}
	if err := fs.Parse(rest); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("admin sender %s: unexpected argument %q", cmd, fs.Arg(0))
	}
	if strings.TrimSpace(*phoneFlag) == "" {
		return fmt.Errorf("admin sender %s: --phone is required", cmd)
	}
	if *org < 0 {
		return fmt.Errorf("admin sender %s: --org must be a positive organization id", cmd)
	}
	var limit *int
	if limitFlag != nil {
		l, err := parseLimit(*limitFlag)
		if err != nil {
			return fmt.Errorf("admin sender set-limit: %w", err)
		}
		limit = l
	}

	svc, closeDB, err := openSenders(ctx, stderr)
	if err != nil {
		return err
	}
	defer closeDB()
	target := senders.AdminTarget{Phone: *phoneFlag, OrgID: *org}
	var res senders.AdminResult
	switch cmd {
	case "suspend":
		res, err = svc.Suspend(ctx, target)
	case "unsuspend":
		res, err = svc.Unsuspend(ctx, target)
	case "reject":
		res, err = svc.Reject(ctx, target)
	case "set-limit":
		res, err = svc.SetLimit(ctx, target, limit)
	}
	if err != nil {
		return fmt.Errorf("admin sender %s: %w", cmd, cliError(err))
	}
	if *asJSON {
		return writeJSON(stdout, res)
	}
	return printAdminResult(stdout, cmd, res)
}

// parseLimit reads --limit: a positive integer or "none".
func parseLimit(v string) (*int, error) {
	v = strings.TrimSpace(v)
	switch {
	case v == "":
		return nil, errors.New("--limit is required (a positive integer, or none)")
	case strings.EqualFold(v, "none"):
		return nil, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > senders.MaxDailyLimitOverride {
		return nil, fmt.Errorf("--limit must be an integer from 1 to %d, or none; got %q", senders.MaxDailyLimitOverride, v)
	}
	return &n, nil
}

// openSenders opens the database and the sender service on it, with the
// configured network (the built-in network, in the same database).
func openSenders(ctx context.Context, stderr io.Writer) (*senders.Service, func(), error) {
	cfg, err := config.Load(os.Getenv)
	if err != nil {
		return nil, nil, err
	}
	if cfg.Network != "builtin" {
		return nil, nil, fmt.Errorf("NETWORK=%s: operator sender commands need the built-in network", cfg.Network)
	}
	d, err := openDB(ctx, stderr)
	if err != nil {
		return nil, nil, err
	}
	// The service queues OTP jobs through River (pgx); the operator
	// commands queue none, so an insert-only client (no workers) does.
	rc, err := queue.NewClient(queue.Config{Pool: d.Pool})
	if err != nil {
		d.Close()
		return nil, nil, err
	}
	nw, err := builtin.New(builtin.Config{DB: d})
	if err != nil {
		d.Close()
		return nil, nil, err
	}
	svc, err := senders.New(senders.Config{DB: d, Jobs: rc, Network: nw, Secret: cfg.APIKeyPepper})
	if err != nil {
		d.Close()
		return nil, nil, err
	}
	return svc, d.Close, nil
}

// cliError turns a service error into a plain message for the terminal.
func cliError(err error) error {
	e, ok := apperr.As(err)
	if !ok || e.Kind == apperr.KindInternal {
		return err
	}
	msg := e.Message
	fields := make([]string, 0, len(e.Fields))
	for f := range e.Fields {
		fields = append(fields, f)
	}
	slices.Sort(fields)
	for _, f := range fields {
		msg += fmt.Sprintf(" %s: %s.", f, strings.Join(e.Fields[f], "; "))
	}
	return errors.New(msg)
}

func printAdminResult(w io.Writer, cmd string, r senders.AdminResult) error {
	s := r.Sender
	head := fmt.Sprintf("sender %s (id %d) of organization %d", s.Phone, s.ID, r.OrganizationID)
	var err error
	if cmd == "set-limit" {
		limit := "organization default"
		if s.DailyLimitOverride != nil {
			limit = strconv.Itoa(*s.DailyLimitOverride) + " messages per day"
		}
		_, err = fmt.Fprintf(w, "%s: daily limit %s (status %s)\n", head, limit, s.Status)
	} else {
		_, err = fmt.Fprintf(w, "%s: %s -> %s\n", head, r.PreviousStatus, s.Status)
	}
	return err
}
