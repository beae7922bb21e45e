// Package term holds what the platform binary's commands share about the
// terminal they run in.
package term

import (
	"io"
	"os"
)

// IsTerminal reports whether w is a character device (a terminal), where
// commands draw progress lines that they leave out of files and pipes.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
