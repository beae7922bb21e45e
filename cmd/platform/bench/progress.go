package bench

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
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

// cpuSnapshot is the CPU time, in clock ticks, that each process of a
// scope (scopeCPU) had used at one moment, by process id.
type cpuSnapshot map[int]float64

// since is the CPU time the processes of s used after before: each one's
// ticks less its ticks in before (from 0 for a process new since). A
// process that ended in between is left out, where subtracting totals
// would count its whole life against the window (a stopped service's
// backends, still there at the first reading, made the figure negative).
func (s cpuSnapshot) since(before cpuSnapshot) float64 {
	var ticks float64
	for pid, t := range s {
		ticks += t - before[pid]
	}
	return ticks
}

// of is the part of s of the processes pids.
func (s cpuSnapshot) of(pids ...int) cpuSnapshot {
	out := cpuSnapshot{}
	for _, p := range pids {
		if t, ok := s[p]; ok {
			out[p] = t
		}
	}
	return out
}

// scopeCPU reads the CPU time (/proc/<pid>/stat utime + stime) of the
// processes pids (all their threads) and of the Postgres backends
// connected to database db (found by their command line, backendDB).
// Unlike cpuTimes it leaves out whatever else the machine runs, so two
// builds compare on a busy machine too; Postgres's shared background work
// (WAL writer, checkpointer) is not in it.
func scopeCPU(db string, pids ...int) cpuSnapshot {
	out := cpuSnapshot{}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return out
	}
	proc := os.DirFS("/proc")
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if !slices.Contains(pids, p) {
			cmd, err := fs.ReadFile(proc, e.Name()+"/cmdline")
			if name, ok := backendDB(string(cmd)); err != nil || !ok || name != db {
				continue
			}
		}
		out[p] = procTicks(proc, e.Name())
	}
	return out
}

// backendDB is the database of the Postgres backend whose command line
// (/proc/<pid>/cmdline) is cmdline: "postgres: <user> <db> <client>
// <state>", or with the server's cluster_name set (Debian sets
// "15/main"), "postgres: <cluster_name>: <user> <db> ...". ok is false
// for any other process (a server's own processes among them:
// "postgres: 15/main: checkpointer").
func backendDB(cmdline string) (db string, ok bool) {
	f := strings.Fields(strings.ReplaceAll(cmdline, "\x00", " "))
	if len(f) < 2 || f[0] != "postgres:" {
		return "", false
	}
	f = f[1:]
	if strings.HasSuffix(f[0], ":") {
		f = f[1:]
	}
	// A backend has at least user, database and client; a server process
	// ("checkpointer", "background writer", "walwriter") has fewer words
	// or none like a client address.
	if len(f) < 3 || !strings.ContainsAny(f[2], ".:[(") && f[2] != "[local]" {
		return "", false
	}
	return f[1], true
}

// procTicks is utime + stime of <pid>/stat in proc (/proc), in clock
// ticks.
func procTicks(proc fs.FS, pid string) float64 {
	b, err := fs.ReadFile(proc, pid+"/stat")
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

// cpuPerMessage is ticks of CPU time over n messages, in milliseconds a
// message (0 when n is 0).
func cpuPerMessage(ticks float64, n int64) float64 {
	if n <= 0 {
		return 0
	}
	return roundMS(ticks * 1000 / userHZ / float64(n))
}
