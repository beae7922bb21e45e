package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"

	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/migrate"
	"github.com/bizmsg/platform/platform/phone"
)

// openDB opens the database of an operator command (network ..., admin ...).
// It reads the configuration from the environment like the server (so
// DATABASE_URL names the same database), creates the database if it is
// missing and migrates the central, network and river schemas, so a command
// works on a fresh database too. Logs go to stderr at LOG_LEVEL; unlike the
// server, it does not warn about generated secrets, which operator commands do
// not use. The caller closes the returned DB.
func openDB(ctx context.Context, stderr io.Writer) (*db.DB, error) {
	cfg, log, err := setup(stderr)
	if err != nil {
		return nil, err
	}
	if err := db.EnsureDatabase(ctx, cfg.DatabaseURL); err != nil {
		return nil, err
	}
	d, err := db.Open(ctx, db.Config{URL: cfg.DatabaseURL, MaxConns: 4})
	if err != nil {
		return nil, err
	}
	m, err := migrate.New(d.Pool, migrate.Config{Logger: log})
	if err != nil {
		d.Close()
		return nil, err
	}
	if _, err := m.Base(ctx); err != nil {
		d.Close()
		return nil, fmt.Errorf("migrate: %w", err)
	}
	return d, nil
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
