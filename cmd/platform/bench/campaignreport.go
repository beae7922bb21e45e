package bench

import (
	"fmt"
	"io"
	"strings"
)

// flatMB is how far above its warm reading a memory figure may peak over
// the rest of the campaign and still count as flat: the campaign's recipients are never
// held in memory (100,000 of them would take far more), the release works
// in bounded batches.
const flatMB = 32

// campaignTargets compares the figures with the targets.
func campaignTargets(r *campaignReport) []target {
	growth := func(m memoryRange) float64 { return roundMS(m.growth()) }
	out := []target{
		atLeast("recipients added/s (100,000 in 10 s)", roundMS(r.Add.Rate), 10000),
		atLeast("release rate vs the pool's throttle, %", roundMS(100*r.Release.Ratio), 90),
		atLeast("delivery rate vs the pool's throttle, %", roundMS(100*r.Delivery.Ratio), 90),
		atMost("service RSS, peak over warm, MB", growth(r.Service), flatMB, len(r.Samples) > 1, r.Service.Warm > 0),
		atMost("backends' private memory, peak over warm, MB", growth(r.Backends), flatMB, len(r.Samples) > 1, r.Backends.Warm > 0),
	}
	once := target{Name: "exactly once (every recipient one message)", Goal: "always", Met: r.Once.OK}
	if r.Once.OK {
		once.Value = 1
	}
	return append(out, once)
}

// printCampaignReport prints the figures as a table.
func printCampaignReport(w io.Writer, r *campaignReport) {
	line := func(name, value string) { fmt.Fprintf(w, "%-52s %s\n", name, value) }
	c := r.Config
	fmt.Fprintf(w, "%s\n%d CPUs, %s, %d recipients, %d sender(s) at %g/s (burst %d): throttle %g/s, service LOG_LEVEL=%s, pool %d\n\n",
		r.Command, r.CPUs, r.GoVersion, c.Recipients, c.Senders, c.SenderRate, c.SenderBurst, r.Throttle, c.LogLevel, c.DBMaxConns)
	line("figure", "value")
	line(strings.Repeat("-", 52), strings.Repeat("-", 50))
	line("recipients added/s", fmt.Sprintf("%9.0f /s  (%d in %.2f s, %d requests of %d; request p50 %.0f ms, max %.0f ms)",
		r.Add.Rate, r.Add.Added, r.Add.Elapsed.Seconds(), r.Add.Requests, c.Chunk, r.Add.P50, r.Add.Max))
	rate := func(x campaignRate) string {
		return fmt.Sprintf("%9.1f /s  (%d in %.1f s from the start; %.1f%% of the throttle)", x.Rate, x.Count, x.Elapsed.Seconds(), 100*x.Ratio)
	}
	line("released (messages created)", rate(r.Release))
	line("delivered (taken by the network)", rate(r.Delivery))
	if w := releasedPer(r.Samples, 30); len(w) > 0 {
		line("  released per 30 s", w)
	}
	line("  CPU meanwhile", fmt.Sprintf("machine %.0f%% busy; service and its backends %.3f ms a recipient", r.CPUBusy, r.CPUPerMessage))
	if n := len(r.Samples); n > 0 {
		last := r.Samples[n-1]
		line("memory samples", fmt.Sprintf("%d, every %s, until %.1f s (%d backends at the end)", n, c.Sample, last.At, last.Backends))
	}
	line("service RSS (VmRSS)", r.Service.String())
	line("backends' private memory (RssAnon)", r.Backends.String())
	line("exactly once (messages = network = recipients)", fmt.Sprintf("%v  (%d, %d, %d to %d recipients; %d delivered)",
		r.Once.OK, r.Once.Messages, r.Once.NetworkRows, r.Once.Recipients, c.Recipients, r.Once.Delivered))
	if r.Autovacuum != "" {
		line("autovacuum", r.Autovacuum)
	}
	fmt.Fprintln(w)
	line("target", "measured   goal    met")
	for _, t := range r.Targets {
		line(t.Name, fmt.Sprintf("%8.2f   %-6s  %v", t.Value, t.Goal, t.Met))
	}
}

// releasedPer words the release rate in each window of secs seconds from
// the start, as the samples saw it (the last window may be partial: it is
// divided by its own length): a release that slows as the campaign goes on
// shows as a falling series.
func releasedPer(samples []memorySample, secs float64) string {
	var (
		out       []string
		prev      int
		prevAt    float64
		windowEnd = secs
	)
	for i, s := range samples {
		last := i == len(samples)-1
		if s.At < windowEnd && !last {
			continue
		}
		if span := s.At - prevAt; span > 0 {
			out = append(out, fmt.Sprintf("%.0f", float64(s.Released-prev)/span))
		}
		prev, prevAt = s.Released, s.At
		for windowEnd <= s.At {
			windowEnd += secs
		}
	}
	return strings.Join(out, " ")
}
