package app

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/bizmsg/platform/platform/db"
)

// sumEach sums what every tenant deleted, goes past a failing tenant and
// names the first failure, and stops at the next tenant once its context
// ends (a shutdown), without counting the rest as failures.
func TestPurgeEach(t *testing.T) {
	t.Parallel()
	tenants := make([]db.Tenant, 5)
	for i := range tenants {
		tn, err := db.NewTenant(int64(i+1), db.SchemaFor(int64(i+1)))
		if err != nil {
			t.Fatal(err)
		}
		tenants[i] = tn
	}
	bad := errors.New("relation gone")
	tests := []struct {
		name      string
		failAt    int64 // tenant whose purge fails (0: none)
		cancelAt  int64 // tenant after whose purge the context ends (0: never)
		wantTotal int64
		wantCalls int
		wantErr   string
	}{
		{"all", 0, 0, 15, 5, ""},
		{"one fails", 2, 0, 13, 5, "1 of 5 tenant(s) failed, first: relation gone"},
		{"cancelled", 0, 2, 3, 2, "stopped after 2 of 5 tenant(s): context canceled"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			calls := 0
			total, err := sumEach(ctx, tenants, func(tn db.Tenant) (int64, error) {
				calls++
				if tn.OrgID == tt.cancelAt {
					cancel()
				}
				if tn.OrgID == tt.failAt {
					return 0, bad
				}
				return tn.OrgID, nil
			})
			if total != tt.wantTotal || calls != tt.wantCalls {
				t.Fatalf("purged %d rows in %d calls, want %d in %d", total, calls, tt.wantTotal, tt.wantCalls)
			}
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("err = %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("err = %v, want %q", err, tt.wantErr)
			}
		})
	}
}
