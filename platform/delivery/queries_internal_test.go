package delivery

import (
	"strings"
	"testing"

	"github.com/bizmsg/platform/platform/messages"
	"github.com/bizmsg/platform/platform/sqlq"
)

// TestMessageColumns holds the fragment delivery_message_columns to
// messages.Columns, the order messages.Row's ScanDest scans: the claims
// and the records with rows read a message positionally, so a column
// added, dropped or moved in one and not the other would scan into the
// wrong fields.
func TestMessageColumns(t *testing.T) {
	t.Parallel()
	f, err := sqlq.ReadFragment(queries, "queries/"+sqlq.FragmentDir+"/delivery_message_columns"+sqlq.Ext)
	if err != nil {
		t.Fatal(err)
	}
	var text []string
	for _, line := range strings.Split(f.Text, "\n") {
		if !strings.HasPrefix(line, "--") {
			text = append(text, line)
		}
	}
	got := strings.Join(strings.Fields(strings.Join(text, " ")), " ")
	if want := messages.Columns; got != want {
		t.Fatalf("delivery_message_columns is\n%s\nmessages.Columns is\n%s", got, want)
	}
}
