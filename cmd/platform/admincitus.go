package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/bizmsg/platform/cmd/platform/internal/term"
	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/migrate"
)

// runAdminCitus runs `platform admin citus <command>`: distribute, where
// and move (docs/scaling.md, §Run on Citus and §Rebalancing).
func runAdminCitus(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return dispatch(ctx, args, stdout, stderr, adminUsage, "admin citus command", map[string]command{
		"distribute": runAdminCitusDistribute,
		"where":      runAdminCitusWhere,
		"move":       runAdminCitusMove,
	})
}

// runAdminCitusDistribute runs `platform admin citus distribute`: it moves
// an installation that began on one server onto a Citus cluster, making
// each tenant schema that is still a regular coordinator schema a
// distributed schema.
func runAdminCitusDistribute(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	d, m, asJSON, err := citusCommand{name: "distribute", usage: "[--json]\n\n" +
		"Distribute every tenant schema that is still a regular schema of the Citus coordinator\n" +
		"DATABASE_URL names (citus_schema_distribute: Citus moves it whole to a worker node),\n" +
		"one at a time. Idempotent.", jsonHelp: "print each schema's placement as one JSON array"}.open(ctx, args, stderr)
	if err != nil {
		return err
	}
	defer d.Close()
	var progress migrate.Progress
	if !asJSON && term.IsTerminal(stderr) {
		progress = migrate.ProgressBar(stderr)
	}
	placed, err := m.DistributeTenants(ctx, progress)
	if err != nil {
		return errors.Join(fmt.Errorf("admin citus distribute: %w", err), printPlacements(stdout, placed, asJSON))
	}
	return printPlacements(stdout, placed, asJSON)
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

// runAdminCitusWhere runs `platform admin citus where`: the node holding
// each organization's tenant schema.
func runAdminCitusWhere(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	d, m, asJSON, err := citusCommand{name: "where", usage: "[--json]\n\n" +
		"List each organization's tenant schema and the worker node (host:port) that holds it,\n" +
		"from Citus's metadata.", jsonHelp: "print the placements as one JSON array"}.open(ctx, args, stderr)
	if err != nil {
		return err
	}
	defer d.Close()
	placed, err := m.Placements(ctx)
	if err != nil {
		return fmt.Errorf("admin citus where: %w", err)
	}
	if asJSON {
		if placed == nil {
			placed = []migrate.Placement{}
		}
		return writeJSON(stdout, placed)
	}
	for _, p := range placed {
		node := p.Node
		if !p.Distributed {
			node = "the coordinator (not distributed)"
		}
		if _, err := fmt.Fprintf(stdout, "organization %d: %s on %s\n", p.Org, p.Schema, node); err != nil {
			return err
		}
	}
	return nil
}

// runAdminCitusMove runs `platform admin citus move`: it moves one
// organization's tenant schema to another worker node while the
// organization goes on sending.
func runAdminCitusMove(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var org *int64
	var node *string
	d, m, asJSON, err := citusCommand{name: "move", usage: "--org ORG_ID --node HOST:PORT [--json]\n\n" +
		"Move the organization's tenant schema whole to the worker node HOST:PORT (as pg_dist_node\n" +
		"names it; see platform admin citus where) with citus_schema_move in transfer mode auto:\n" +
		"logical replication, so the organization's sends go on during the copy and wait only\n" +
		"while Citus switches the schema over (docs/scaling.md, §Rebalancing).",
		jsonHelp: "print the move as one JSON object",
		flags: func(fs *flag.FlagSet) {
			org = fs.Int64("org", 0, "the organization's id (required)")
			node = fs.String("node", "", "the target worker node, host:port (required)")
		},
		check: func() error {
			if *org <= 0 || *node == "" {
				return errors.New("admin citus move: --org (a positive id) and --node are required")
			}
			return nil
		}}.open(ctx, args, stderr)
	if err != nil {
		return err
	}
	defer d.Close()
	mv, err := m.MoveTenant(ctx, *org, *node)
	if err != nil {
		return fmt.Errorf("admin citus move: %w", err)
	}
	if asJSON {
		return writeJSON(stdout, mv)
	}
	_, err = fmt.Fprintf(stdout, "organization %d: %s moved from %s to %s in %s\n",
		mv.Org, mv.Schema, mv.From, mv.To, mv.Took.Round(time.Millisecond))
	return err
}

// citusCommand is one `platform admin citus` command's flags.
type citusCommand struct {
	name     string
	usage    string // the synopsis after the command's name, a blank line, what it does
	jsonHelp string // what --json prints
	// flags adds the command's other flags; check validates them before
	// the database is opened. Both may be nil.
	flags func(*flag.FlagSet)
	check func() error
}

// open parses args and opens the database, reporting --json.
func (c citusCommand) open(ctx context.Context, args []string, stderr io.Writer) (*db.DB, *migrate.Migrator, bool, error) {
	fs := flag.NewFlagSet("admin citus "+c.name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: platform admin citus %s %s\n\nFlags:\n", c.name, c.usage)
		fs.PrintDefaults()
	}
	asJSON := fs.Bool("json", false, c.jsonHelp)
	if c.flags != nil {
		c.flags(fs)
	}
	if err := parseFlags(fs, args); err != nil {
		return nil, nil, false, err
	}
	if c.check != nil {
		if err := c.check(); err != nil {
			return nil, nil, false, err
		}
	}
	d, m, _, err := openOperator(ctx, stderr)
	return d, m, *asJSON, err
}
