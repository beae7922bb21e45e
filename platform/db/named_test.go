package db_test

import (
	"context"
	"testing"
	"testing/fstest"

	"github.com/jackc/pgx/v5"

	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/dbtest"
	"github.com/bizmsg/platform/platform/sqlq"
)

// The named-query helpers write a query for pgx with the schema given and
// run it on a pool or a transaction; a name that is not a query is an
// error from each, the row's Scan included, and runs nothing.
func TestNamedHelpers(t *testing.T) {
	t.Parallel()
	d := dbtest.Open(t, dbtest.NewDatabase(t))
	ctx := context.Background()
	qs, err := sqlq.Load(fstest.MapFS{
		"q/add.sql":   {Data: []byte("-- Adds a word.\nINSERT INTO ?schema.words (w) VALUES (?w), (?w || '!')")},
		"q/count.sql": {Data: []byte("-- Counts the words.\nSELECT count(*) FROM ?schema.words")},
		"q/list.sql":  {Data: []byte("-- Lists the words.\nSELECT w FROM ?schema.words ORDER BY w")},
	}, "q")
	if err != nil {
		t.Fatal(err)
	}
	schema := pgx.Identifier{"named helpers"}.Sanitize()
	if _, err := d.Pool.Exec(ctx, "CREATE SCHEMA "+schema+"; CREATE TABLE "+schema+".words (w text)"); err != nil {
		t.Fatal(err)
	}
	tag, err := db.ExecNamed(ctx, d.Pool, qs, "add", schema, sqlq.Args{"w": "hi"})
	if err != nil || tag.RowsAffected() != 2 {
		t.Fatalf("ExecNamed: %v, %d rows", err, tag.RowsAffected())
	}
	err = pgx.BeginFunc(ctx, d.Pool, func(tx pgx.Tx) error {
		rows, err := db.QueryNamed(ctx, tx, qs, "list", schema, nil)
		if err != nil {
			return err
		}
		words, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return err
		}
		if len(words) != 2 || words[0] != "hi" || words[1] != "hi!" {
			t.Errorf("QueryNamed read %q", words)
		}
		var n int
		if err := db.QueryRowNamed(ctx, tx, qs, "count", schema, nil).Scan(&n); err != nil || n != 2 {
			t.Errorf("QueryRowNamed: %v, %d", err, n)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

	if _, err := db.ExecNamed(ctx, d.Pool, qs, "nope", schema, nil); err == nil {
		t.Error("ExecNamed ran a query that does not exist")
	}
	if rows, err := db.QueryNamed(ctx, d.Pool, qs, "nope", schema, nil); err == nil {
		rows.Close()
		t.Error("QueryNamed ran a query that does not exist")
	}
	var n int
	if err := db.QueryRowNamed(ctx, d.Pool, qs, "nope", schema, nil).Scan(&n); err == nil {
		t.Error("QueryRowNamed's row scanned for a query that does not exist")
	}
}
