package db_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/dbtest"
)

// BeginFunc runs what AfterCommit registered once the transaction has
// committed, in order, and nothing after a rollback; on a transaction begun
// elsewhere (or a savepoint of one) AfterCommit answers ErrNoCommitHook.
func TestAfterCommit(t *testing.T) {
	t.Parallel()
	d := dbtest.Open(t, dbtest.NewDatabase(t))
	ctx := context.Background()
	if _, err := d.Pool.Exec(ctx, `CREATE TABLE marks (n int)`); err != nil {
		t.Fatal(err)
	}
	failed := errors.New("fn failed")
	tests := []struct {
		name    string
		fnErr   error
		want    []string
		wantErr error
	}{
		{"committed", nil, []string{"first", "second"}, nil},
		{"rolled back", failed, nil, failed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var ran []string
			err := db.BeginFunc(ctx, d.Pool, func(tx pgx.Tx) error {
				for _, name := range []string{"first", "second"} {
					if err := db.AfterCommit(tx, func() {
						// The commit is visible from another connection.
						var n int
						if err := d.Pool.QueryRow(ctx, `SELECT count(*) FROM marks`).Scan(&n); err != nil || n == 0 {
							t.Errorf("after commit: %d rows, %v", n, err)
						}
						ran = append(ran, name)
					}); err != nil {
						t.Fatalf("AfterCommit refused BeginFunc's transaction: %v", err)
					}
				}
				if _, err := tx.Exec(ctx, `INSERT INTO marks VALUES (1)`); err != nil {
					return err
				}
				return tt.fnErr
			})
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("BeginFunc = %v, want %v", err, tt.wantErr)
			}
			if len(ran) != len(tt.want) || (len(ran) > 0 && (ran[0] != tt.want[0] || ran[1] != tt.want[1])) {
				t.Fatalf("ran %v after the transaction, want %v", ran, tt.want)
			}
			if _, err := d.Pool.Exec(ctx, `TRUNCATE marks`); err != nil {
				t.Fatal(err)
			}
		})
	}
	err := pgx.BeginFunc(ctx, d.Pool, func(tx pgx.Tx) error {
		if err := db.AfterCommit(tx, func() {}); !errors.Is(err, db.ErrNoCommitHook) {
			t.Errorf("AfterCommit on a transaction begun by pgx.BeginFunc = %v, want ErrNoCommitHook", err)
		}
		return db.BeginFunc(ctx, tx, func(sp pgx.Tx) error {
			if err := db.AfterCommit(sp, func() {}); !errors.Is(err, db.ErrNoCommitHook) {
				t.Errorf("AfterCommit on a savepoint of a transaction begun by pgx.BeginFunc = %v, want ErrNoCommitHook", err)
			}
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
}

// A savepoint's functions run when its outer transaction commits, and not
// when the savepoint rolls back.
func TestAfterCommitSavepoint(t *testing.T) {
	t.Parallel()
	d := dbtest.Open(t, dbtest.NewDatabase(t))
	ctx := context.Background()
	var ran []string
	failed := errors.New("savepoint failed")
	err := db.BeginFunc(ctx, d.Pool, func(tx pgx.Tx) error {
		if err := db.BeginFunc(ctx, tx, func(sp pgx.Tx) error {
			if err := db.AfterCommit(sp, func() { ran = append(ran, "released") }); err != nil {
				return err
			}
			return nil
		}); err != nil {
			return err
		}
		if len(ran) != 0 {
			t.Error("a released savepoint's function ran before the commit")
		}
		if err := db.BeginFunc(ctx, tx, func(sp pgx.Tx) error {
			if err := db.AfterCommit(sp, func() { ran = append(ran, "rolled back") }); err != nil {
				return err
			}
			return failed
		}); !errors.Is(err, failed) {
			return fmt.Errorf("savepoint = %w", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(ran) != 1 || ran[0] != "released" {
		t.Fatalf("ran %v, want [released]", ran)
	}
}
