package yield

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// ProcStat reads the machine's cumulative idle (idle and iowait) and total
// CPU time, in clock ticks, from the first line of Linux's /proc/stat.
func ProcStat() (idle, total uint64, err error) {
	f, err := os.Open("/proc/stat")
	if err != nil {
		return 0, 0, fmt.Errorf("read CPU time: %w", err)
	}
	defer func() { _ = f.Close() }()
	line, err := bufio.NewReader(f).ReadString('\n')
	if err != nil {
		return 0, 0, fmt.Errorf("read CPU time: %w", err)
	}
	return parseCPULine(line)
}

// parseCPULine parses /proc/stat's "cpu" line: user, nice, system, idle,
// iowait, irq, softirq and steal ticks (guest time is already in user and
// nice, and is not added again).
func parseCPULine(line string) (idle, total uint64, err error) {
	fields := strings.Fields(line)
	if len(fields) < 9 || fields[0] != "cpu" {
		return 0, 0, errors.New("read CPU time: /proc/stat does not start with a cpu line")
	}
	for i, f := range fields[1:9] {
		n, err := strconv.ParseUint(f, 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("read CPU time: field %d of /proc/stat's cpu line: %w", i+1, err)
		}
		total += n
		if i == 3 || i == 4 {
			idle += n
		}
	}
	return idle, total, nil
}
