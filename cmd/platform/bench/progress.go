package bench

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bizmsg/platform/cmd/platform/internal/term"
)

// progress shows one line on stderr for the running phase: its name, the
// time spent and a count. On a terminal the line is rewritten in place four
// times a second; otherwise each phase prints one line when it starts.
type progress struct {
	w     io.Writer
	tty   bool
	mu    sync.Mutex
	name  string
	start time.Time
	count atomic.Int64
	stop  chan struct{}
	done  sync.WaitGroup
}

func newProgress(w io.Writer) *progress {
	p := &progress{w: w, tty: term.IsTerminal(w), stop: make(chan struct{})}
	if p.tty {
		p.done.Go(p.loop)
	}
	return p
}

// phase starts a new phase and returns the function that reports its count.
func (p *progress) phase(name string) func(int64) {
	p.mu.Lock()
	p.name, p.start = name, time.Now()
	p.count.Store(0)
	p.mu.Unlock()
	if !p.tty {
		fmt.Fprintf(p.w, "bench: %s\n", name)
	}
	return func(n int64) { p.count.Store(n) }
}

func (p *progress) loop() {
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-p.stop:
			fmt.Fprintf(p.w, "\r%-90s\r", "")
			return
		case <-t.C:
			p.mu.Lock()
			name, start := p.name, p.start
			p.mu.Unlock()
			if name != "" {
				fmt.Fprintf(p.w, "\r%-60s %6.1fs %9d", name, time.Since(start).Seconds(), p.count.Load())
			}
		}
	}
}

// close clears the line.
func (p *progress) close() {
	close(p.stop)
	p.done.Wait()
}

// cpuTimes is a snapshot of the machine's CPU time (/proc/stat), in clock
// ticks (userHZ a second), to tell how busy the whole machine was during a
// phase: busy is every CPU's time but idle and iowait, work the time its
// processes and the kernel used (busy without the time a hypervisor stole),
// steal that stolen time.
type cpuTimes struct{ busy, work, steal, total float64 }

// userHZ is the unit of /proc/stat's times: Linux's USER_HZ, 100 on every
// architecture it runs on.
const userHZ = 100

func readCPU() cpuTimes {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return cpuTimes{}
	}
	line, _, _ := strings.Cut(string(b), "\n")
	var t cpuTimes
	for i, f := range strings.Fields(line)[1:] {
		v, _ := strconv.ParseFloat(f, 64)
		t.total += v
		if i != 3 && i != 4 { // idle, iowait
			t.busy += v
		}
		if i <= 2 || i == 5 || i == 6 { // user, nice, system, irq, softirq
			t.work += v
		}
		if i == 7 {
			t.steal += v
		}
	}
	return t
}

// busySince is the machine's CPU use since s, in percent of all CPUs.
func busySince(s cpuTimes) float64 {
	return shareSince(s, func(t cpuTimes) float64 { return t.busy })
}

// stealSince is the share of all CPUs' time since s that a hypervisor
// gave to other machines, in percent: time the machine's processes were
// ready to run and could not.
func stealSince(s cpuTimes) float64 {
	return shareSince(s, func(t cpuTimes) float64 { return t.steal })
}

// shareSince is part of all CPUs' time since s, in percent; 0 when no
// time passed.
func shareSince(s cpuTimes, part func(cpuTimes) float64) float64 {
	e := readCPU()
	if e.total <= s.total {
		return 0
	}
	return roundMS((part(e) - part(s)) / (e.total - s.total) * 100)
}

// cpuPerItem is the milliseconds of CPU time the machine's processes used
// since s (cpuTimes.work), per item of n; 0 when n is 0.
func cpuPerItem(s cpuTimes, n int64) float64 {
	if n <= 0 {
		return 0
	}
	return (readCPU().work - s.work) * 1000 / userHZ / float64(n)
}

// scopeCPU is the CPU time, in clock ticks, that the process pid (all its
// threads) and the Postgres backends connected to database db have used so
// far (/proc/<pid>/stat utime + stime; a backend's command line reads
// "postgres: <user> <db> ..."). Unlike cpuTimes it leaves out whatever
// else the machine runs, so two builds compare on a busy machine too;
// Postgres's shared background work (WAL writer, checkpointer) is not in
// it.
func scopeCPU(pid int, db string) float64 {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	var ticks float64
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if p != pid {
			cmd, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
			f := strings.Fields(strings.ReplaceAll(string(cmd), "\x00", " "))
			if err != nil || len(f) < 3 || f[0] != "postgres:" || f[2] != db {
				continue
			}
		}
		ticks += procTicks(e.Name())
	}
	return ticks
}

// procTicks is utime + stime of /proc/<pid>/stat, in clock ticks.
func procTicks(pid string) float64 {
	b, err := os.ReadFile("/proc/" + pid + "/stat") //nolint:gosec // G304: pid is a /proc entry name that parsed as a number
	if err != nil {
		return 0
	}
	// The command (field 2) is in parentheses and may hold spaces.
	_, rest, ok := strings.Cut(string(b), ") ")
	f := strings.Fields(rest)
	if !ok || len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseFloat(f[11], 64)
	s, _ := strconv.ParseFloat(f[12], 64)
	return u + s
}
