package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/bizmsg/platform/cmd/platform/internal/term"
	"github.com/bizmsg/platform/platform/migrate"
)

// runAdminCitus runs `platform admin citus distribute`: it moves an
// installation that began on one server onto a Citus cluster, making each
// tenant schema that is still a regular coordinator schema a distributed
// schema (docs/scaling.md, §Run on Citus).
func runAdminCitus(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if err := subcommand(args, "citus", "distribute", stderr); err != nil {
		return err
	}
	fs := flag.NewFlagSet("admin citus distribute", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, "Usage: platform admin citus distribute [--json]\n\n"+
			"Distribute every tenant schema that is still a regular schema of the Citus coordinator\n"+
			"DATABASE_URL names (citus_schema_distribute: Citus moves it whole to a worker node),\n"+
			"one at a time, and make central.organizations a reference table. Idempotent.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	asJSON := fs.Bool("json", false, "print each schema's placement as one JSON array")
	if err := parseFlags(fs, args[1:]); err != nil {
		return err
	}
	d, m, _, err := openOperator(ctx, stderr)
	if err != nil {
		return err
	}
	defer d.Close()
	var progress migrate.Progress
	if !*asJSON && term.IsTerminal(stderr) {
		progress = migrate.ProgressBar(stderr)
	}
	placed, err := m.DistributeTenants(ctx, progress)
	if err != nil {
		return errors.Join(fmt.Errorf("admin citus distribute: %w", err), printPlacements(stdout, placed, *asJSON))
	}
	return printPlacements(stdout, placed, *asJSON)
}

// printPlacements writes where each tenant schema is.
func printPlacements(w io.Writer, placed []migrate.Distribution, asJSON bool) error {
	if asJSON {
		if placed == nil {
			placed = []migrate.Distribution{}
		}
		return writeJSON(w, placed)
	}
	moved := 0
	for _, p := range placed {
		verb := "already distributed"
		if p.Moved {
			verb, moved = "distributed", moved+1
		}
		if _, err := fmt.Fprintf(w, "%s: %s, on %s\n", p.Schema, verb, p.Node); err != nil {
			return err
		}
	}
	_, err := fmt.Fprintf(w, "%d tenant schema(s): %d distributed now, %d already\n", len(placed), moved, len(placed)-moved)
	return err
}
