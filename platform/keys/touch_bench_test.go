package keys_test

import (
	"bytes"
	"context"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bizmsg/platform/platform/apikey"
	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/dbtest"
	"github.com/bizmsg/platform/platform/keys"
)

// BenchmarkAuthenticate measures authentication by 16 concurrent callers
// over 200 keys on real Postgres, when no request has to write last_used_at
// ("fresh": the key was used within the touch interval) and when every one
// has to ("stale": what a service over many more keys than requests a
// minute meets, e.g. 10,000 tenants). Run it with
//
//	go test -run '^$' -bench Authenticate ./platform/keys
func BenchmarkAuthenticate(b *testing.B) {
	for _, bc := range []struct {
		name     string
		interval time.Duration
	}{{"fresh", time.Hour}, {"stale", time.Nanosecond}} {
		b.Run(bc.name, func(b *testing.B) {
			d, _ := dbtest.Migrated(b)
			ctx := context.Background()
			var org int64
			if err := d.Pool.QueryRow(ctx, `INSERT INTO central.organizations (name) VALUES ('o') RETURNING id`).Scan(&org); err != nil {
				b.Fatal(err)
			}
			if _, err := d.Pool.Exec(ctx, `UPDATE central.organizations SET schema_name = $2 WHERE id = $1`, org, db.SchemaFor(org)); err != nil {
				b.Fatal(err)
			}
			h, err := apikey.NewHasher(bytes.Repeat([]byte("p"), 32))
			if err != nil {
				b.Fatal(err)
			}
			svc, err := keys.New(d.Pool, keys.Config{Hasher: h, TouchInterval: bc.interval})
			if err != nil {
				b.Fatal(err)
			}
			plains := make([]string, 200)
			for i := range plains {
				c, err := svc.Create(ctx, org, keys.Actor{}, keys.Spec{Name: "k", Scopes: []string{"*"}, ExpiresInDays: 1})
				if err != nil {
					b.Fatal(err)
				}
				plains[i] = c.Plain
			}
			var next atomic.Int64
			b.SetParallelism(max(1, 16/runtime.GOMAXPROCS(0))) // 16 callers on 2 cores
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					i := next.Add(1) % int64(len(plains))
					if _, err := svc.Authenticate(ctx, plains[i]); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.StopTimer()
			b.ReportMetric(float64(svc.LastUsedWrites())/float64(b.N), "writes/op")
		})
	}
}
