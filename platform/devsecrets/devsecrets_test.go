package devsecrets_test

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/bizmsg/platform/platform/dbtest"
	"github.com/bizmsg/platform/platform/devsecrets"
)

// Keep stores the first value and returns it to every later call; of many
// processes starting at once exactly one stores its value and all of them
// use it.
func TestKeep(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		callers int
	}{
		{"one process, restarted", 1},
		{"eight processes starting at once", 8},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			d, _ := dbtest.Migrated(t)
			ctx := context.Background()
			type result struct {
				value   []byte
				created bool
				err     error
			}
			results := make([]result, tt.callers)
			var wg sync.WaitGroup
			for i := range tt.callers {
				wg.Go(func() {
					generated := bytes.Repeat([]byte{byte('a' + i)}, 32)
					v, created, err := devsecrets.Keep(ctx, d.Bun, "JWT_SECRET", generated)
					results[i] = result{v, created, err}
				})
			}
			wg.Wait()
			created := 0
			for i, r := range results {
				if r.err != nil {
					t.Fatalf("caller %d: %v", i, r.err)
				}
				if !bytes.Equal(r.value, results[0].value) {
					t.Fatalf("caller %d got %q, caller 0 %q", i, r.value, results[0].value)
				}
				if r.created {
					created++
				}
			}
			if created != 1 {
				t.Fatalf("%d callers stored their value, want 1", created)
			}
			// A restart: the kept value wins over a newly generated one.
			again, created2, err := devsecrets.Keep(ctx, d.Bun, "JWT_SECRET", bytes.Repeat([]byte("z"), 32))
			if err != nil || created2 || !bytes.Equal(again, results[0].value) {
				t.Fatalf("after a restart Keep = %q, %v, %v; want the kept %q", again, created2, err, results[0].value)
			}
			// Another secret is kept apart.
			other, _, err := devsecrets.Keep(ctx, d.Bun, "API_KEY_PEPPER", bytes.Repeat([]byte("p"), 32))
			if err != nil || string(other) != strings.Repeat("p", 32) {
				t.Fatalf("API_KEY_PEPPER = %q, %v", other, err)
			}
		})
	}
}
