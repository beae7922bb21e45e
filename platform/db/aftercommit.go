package db

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// Beginner begins transactions: a pool, a pool connection or a connection.
type Beginner interface {
	Begin(ctx context.Context) (pgx.Tx, error)
}

// hookedTx is a transaction begun by BeginFunc: it keeps the functions to
// run once it has committed (AfterCommit). A savepoint of one (BeginFunc on
// a hookedTx) hands its functions to its parent when it is released.
type hookedTx struct {
	pgx.Tx
	parent *hookedTx
	after  []func()
}

// BeginFunc runs fn in a transaction begun on b and commits it when fn
// returns nil (rolls it back otherwise, and on a panic). After the commit it
// runs, in order, the functions fn registered with AfterCommit; after a
// rollback none. On a transaction BeginFunc began, it runs fn in a
// savepoint, whose functions run when the outer transaction commits (and
// not if the savepoint rolls back). Every transaction of the platform that
// may record a webhook event is begun here, so the event's process learns
// at once that it committed (docs/design.md, §Webhooks).
func BeginFunc(ctx context.Context, b Beginner, fn func(tx pgx.Tx) error) error {
	raw, err := b.Begin(ctx)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	defer func() { _ = raw.Rollback(context.WithoutCancel(ctx)) }() // after Commit, a no-op
	parent, nested := b.(*hookedTx)
	if _, savepoint := b.(pgx.Tx); savepoint && !nested {
		// A savepoint of a transaction begun elsewhere: nothing runs its
		// functions, so it takes none.
		if err := fn(raw); err != nil {
			return err
		}
		return commit(ctx, raw)
	}
	tx := &hookedTx{Tx: raw, parent: parent}
	if err := fn(tx); err != nil {
		return err
	}
	if err := commit(ctx, raw); err != nil {
		return err
	}
	if parent != nil {
		parent.after = append(parent.after, tx.after...)
		return nil
	}
	for _, f := range tx.after {
		f()
	}
	return nil
}

func commit(ctx context.Context, tx pgx.Tx) error {
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

// ErrNoCommitHook is AfterCommit's answer on a transaction that BeginFunc
// did not begin: nothing would run f after its commit.
var ErrNoCommitHook = errors.New("db: the transaction was not begun by db.BeginFunc, so nothing runs after its commit")

// AfterCommit registers f to run when tx has committed. tx must be a
// transaction BeginFunc began, or a savepoint BeginFunc began in one; on
// any other it returns ErrNoCommitHook, so a caller cannot lose f without
// knowing (it fails its transaction, or decides f is not needed). f runs
// in the goroutine that committed, so it must not block.
func AfterCommit(tx pgx.Tx, f func()) error {
	h, ok := tx.(*hookedTx)
	if !ok {
		return ErrNoCommitHook
	}
	h.after = append(h.after, f)
	return nil
}
