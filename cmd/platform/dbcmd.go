package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"

	"github.com/bizmsg/platform/platform/app"
	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/migrate"
	"github.com/bizmsg/platform/platform/phone"
)

// openDB opens the database of an operator command (network ..., admin ...).
// It reads the configuration from the environment like the server (so
// DATABASE_URL names the same database) and opens the database the service
// set up (app.OpenExisting): it creates and migrates nothing, so a command
// pointed at the wrong server fails, naming the database it tried, instead
// of setting one up there. Logs go to stderr at LOG_LEVEL; unlike the
// server, it does not warn about generated secrets, which operator commands
// do not use. The caller closes the returned DB.
func openDB(ctx context.Context, stderr io.Writer) (*db.DB, error) {
	d, _, _, err := openOperator(ctx, stderr)
	return d, err
}

// openOperator is openDB for the commands that also need the database's
// migrator (its tenants, its schemas) and the command's logger.
func openOperator(ctx context.Context, stderr io.Writer) (*db.DB, *migrate.Migrator, *slog.Logger, error) {
	cfg, log, err := setup(stderr)
	if err != nil {
		return nil, nil, nil, err
	}
	d, m, err := app.OpenExisting(ctx, cfg, "bizmsg operator", 4, log)
	return d, m, log, err
}

// The helpers below are shared by the operator commands (network, admin).

// parseFlags parses args and refuses positional arguments.
func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		fs.Usage()
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	return nil
}

// phoneFlag validates a required phone flag and returns it in E.164.
func phoneFlag(name, value string) (string, error) {
	if value == "" {
		return "", fmt.Errorf("--%s is required", name)
	}
	p, err := phone.Normalize(value)
	if err != nil {
		return "", fmt.Errorf("--%s %q: %w", name, value, err)
	}
	return p, nil
}

// parsePhones parses args like parseFlags, then returns the values of the
// phone flags names (which fs defines), each required and in E.164
// (phoneFlag), in the order named.
func parsePhones(fs *flag.FlagSet, args []string, names ...string) ([]string, error) {
	if err := parseFlags(fs, args); err != nil {
		return nil, err
	}
	phones := make([]string, len(names))
	for i, name := range names {
		p, err := phoneFlag(name, fs.Lookup(name).Value.String())
		if err != nil {
			return nil, err
		}
		phones[i] = p
	}
	return phones, nil
}

// writeJSON writes v as one line of JSON.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}
