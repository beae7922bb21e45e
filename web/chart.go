package web

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/bizmsg/platform/platform/usage"
)

// Chart geometry, in SVG user units (the SVG scales to its container).
const (
	chartWidth  = 720
	chartHeight = 240
	chartLeft   = 44 // room for the y-axis labels, at least
	chartRight  = 8
	chartTop    = 18 // room for the top y label's upper half at the phone size
	chartBottom = 28 // room for the x-axis labels
	// axisCharWidth is the widest a digit of an axis label gets: the
	// phone layout (app.css, max-width 40rem) sets the labels at 22 user
	// units, and a digit is about 0.55 em wide.
	axisCharWidth = 13
	// axisGap is the space between a y label and the plot (the
	// template's dx) plus a margin from the SVG's left edge.
	axisGap = 10
)

// chartSeries are the stacked statuses, bottom first, with their CSS
// classes and labels.
var chartSeries = []struct {
	Class, Label string
	count        func(usage.Counts) int64
}{
	{"s-read", "read", func(c usage.Counts) int64 { return c.Read }},
	{"s-delivered", "delivered", func(c usage.Counts) int64 { return c.Delivered }},
	{"s-sent", "sent", func(c usage.Counts) int64 { return c.Sent }},
	{"s-queued", "queued", func(c usage.Counts) int64 { return c.Queued }},
	{"s-failed", "failed", func(c usage.Counts) int64 { return c.Failed }},
}

// chart is a stacked bar chart of messages per day by status, laid out for
// the overview template, which draws it as inline SVG.
type chart struct {
	Width, Height int
	// Left, Right, Top and Bottom are the plot area's edges.
	Left, Right, Top, Bottom float64
	Bars                     []chartBar
	YTicks                   []chartTick
	XLabels                  []chartTick
	Legend                   []chartLegend
	// Summary describes the chart in words (its SVG desc, for screen
	// readers); Days is the data as a table.
	Summary string
	Days    []usage.Day
}

// chartBar is one day: its stacked segments and a tooltip.
type chartBar struct {
	X, W     float64
	Segments []chartSegment
	Title    string
}

// chartSegment is one status's part of a bar.
type chartSegment struct {
	Y, H  float64
	Class string
}

// chartTick is an axis label at a position, and for an x label its
// text-anchor (middle, or end for the last one).
type chartTick struct {
	Pos    float64
	Label  string
	Anchor string
}

// chartLegend is a legend entry.
type chartLegend struct{ Class, Label string }

// newChart lays out days (oldest first).
func newChart(days []usage.Day) chart {
	ch := chart{
		Width: chartWidth, Height: chartHeight,
		Left: chartLeft, Right: chartWidth - chartRight, Top: chartTop, Bottom: chartHeight - chartBottom,
		Days: days,
	}
	for _, s := range chartSeries {
		ch.Legend = append(ch.Legend, chartLegend{Class: s.Class, Label: s.Label})
	}
	var peak int64
	var total usage.Counts
	for _, d := range days {
		peak = max(peak, d.Total)
		total.Add(d.Counts)
	}
	top := niceCeil(peak)
	plotH := ch.Bottom - ch.Top
	// The plot starts where the longest y label (the top one) ends, so no
	// label is cut at the SVG's left edge, even at the phone font size.
	ch.Left = max(chartLeft, float64(axisGap+axisCharWidth*len(fmt.Sprint(top))))
	for i := 0; i <= 4; i++ {
		v := top * int64(i) / 4
		ch.YTicks = append(ch.YTicks, chartTick{Pos: r1(ch.Bottom - plotH*float64(v)/float64(top)), Label: fmt.Sprint(v)})
	}
	if len(days) == 0 {
		ch.Summary = "No data."
		return ch
	}
	slot := (ch.Right - ch.Left) / float64(len(days))
	barW := slot * 0.72
	for i, d := range days {
		b := chartBar{X: r1(ch.Left + slot*float64(i) + (slot-barW)/2), W: r1(barW)}
		y := ch.Bottom
		var parts []string
		for _, s := range chartSeries {
			n := s.count(d.Counts)
			parts = append(parts, fmt.Sprintf("%d %s", n, s.Label))
			if n == 0 {
				continue
			}
			h := plotH * float64(n) / float64(top)
			y -= h
			b.Segments = append(b.Segments, chartSegment{Y: r1(y), H: r1(h), Class: s.Class})
		}
		b.Title = fmt.Sprintf("%s: %d messages (%s)", d.Date, d.Total, strings.Join(parts, ", "))
		ch.Bars = append(ch.Bars, b)
		// A date label every 5 days, ending on the last day.
		if (len(days)-1-i)%5 == 0 {
			label := d.Date
			if t, err := time.Parse(time.DateOnly, d.Date); err == nil {
				label = t.Format("Jan 2")
			}
			tick := chartTick{Pos: r1(b.X + b.W/2), Label: label, Anchor: "middle"}
			if i == len(days)-1 {
				// Centred under the last bar, the label would run past
				// the SVG's right edge (and be cut) when the phone layout
				// enlarges it; it ends at the bar's right edge instead.
				tick.Pos, tick.Anchor = r1(b.X+b.W), "end"
			}
			ch.XLabels = append(ch.XLabels, tick)
		}
	}
	ch.Summary = fmt.Sprintf("%d messages from %s to %s: %d read, %d delivered, %d sent, %d queued, %d failed; %d received; the busiest day had %d.",
		total.Total, days[0].Date, days[len(days)-1].Date, total.Read, total.Delivered, total.Sent, total.Queued, total.Failed,
		total.Received, peak)
	return ch
}

// r1 rounds a coordinate to a tenth of a unit, enough for any screen.
func r1(v float64) float64 { return math.Round(v*10) / 10 }

// niceCeil rounds n up to the next of 1, 2, 4, 5 or 8 times a power of ten
// that four gridlines divide into whole numbers (4, 8, 20, 40, 80, 100,
// 200, ...), at least 4.
func niceCeil(n int64) int64 {
	for p := int64(1); ; p *= 10 {
		for _, m := range []int64{1, 2, 4, 5, 8} {
			if v := m * p; v >= n && v%4 == 0 {
				return v
			}
		}
	}
}
