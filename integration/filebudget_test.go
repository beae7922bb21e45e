package integration

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/bizmsg/platform/platform/db"
)

// The service says what the database server needs for its organizations:
// with more tenant schemas than max_files_per_process covers, /readyz
// stays 200 and names the setting and the value to set, and /metrics
// shows both figures. Few organizations: no warning.
func TestReadyzWarnsOfTooFewFiles(t *testing.T) {
	t.Parallel()
	e := Start(t, Options{})
	ctx := context.Background()
	e.Register(t)

	r := e.Do(Request{Method: http.MethodGet, Path: "/readyz"})
	if r.Status != http.StatusOK || strings.Contains(string(r.Body), "warnings") {
		t.Fatalf("one organization: /readyz = %d %s, want ready without warnings", r.Status, r.Body)
	}

	b, err := db.ReadFileBudget(ctx, e.App.DB.Pool)
	if err != nil {
		t.Fatal(err)
	}
	if b.Tenants != 1 || b.RelationsPerTenant < 10 || b.MaxFilesPerProcess < 1 {
		t.Fatalf("file budget %+v: want 1 tenant of at least 10 tables and indexes", b)
	}
	// Enough organizations (rows only: the budget counts schemas from
	// central and measures one) to pass the server's setting.
	more := b.MaxFilesPerProcess/b.RelationsPerTenant + 1
	if _, err := e.App.DB.Pool.Exec(ctx, `INSERT INTO central.organizations (name, schema_name)
		SELECT 'files ' || g, 'tenant_files_' || g FROM generate_series(1, $1) g`, more); err != nil {
		t.Fatal(err)
	}
	r = e.Do(Request{Method: http.MethodGet, Path: "/readyz"})
	var body struct {
		Status   string   `json:"status"`
		Warnings []string `json:"warnings"`
	}
	r.JSON(t, &body)
	if r.Status != http.StatusOK || body.Status != "ready" || len(body.Warnings) != 1 ||
		!strings.Contains(body.Warnings[0], "set max_files_per_process to at least") {
		t.Fatalf("%d organizations: /readyz = %d %s, want ready with the setting to raise", more+1, r.Status, r.Body)
	}

	req, err := http.NewRequestWithContext(ctx, http.MethodGet, e.Server.URL+"/metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	metrics, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"postgres_max_files_per_process ", "tenant_relation_files "} {
		if !strings.Contains(string(metrics), "\n"+name) {
			t.Errorf("/metrics lacks %s", name)
		}
	}
}
