package keys_test

import (
	"context"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bizmsg/platform/platform/clock"
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
			// The real clock: a stale key's write is due at every request.
			f := newFixture(b, false, func(c *keys.Config) { c.Clock, c.TouchInterval = clock.Real{}, bc.interval })
			ctx := context.Background()
			plains := make([]string, 200)
			for i := range plains {
				plains[i] = f.create(b, keys.Actor{}, 1, "*").Plain
			}
			svc := f.svc
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
