package integration

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bizmsg/platform/client"
)

// quickstartPath is docs/quickstart.md, relative to this package.
var quickstartPath = filepath.Join("..", "docs", "quickstart.md")

// quickstartMarker is the line before each fenced sh block the test runs.
const quickstartMarker = "<!-- quickstart:run -->"

// quickstartBlock is one block of the quickstart to run, and the line of
// the doc where it starts.
type quickstartBlock struct {
	Line int
	Code string
}

// quickstartBlocks returns the doc's blocks marked to run, in order: a
// ```sh fence on the line after quickstartMarker, up to its closing fence.
func quickstartBlocks(doc []byte) ([]quickstartBlock, error) {
	var (
		blocks []quickstartBlock
		marked bool
		in     *quickstartBlock
	)
	sc := bufio.NewScanner(bytes.NewReader(doc))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case in != nil && strings.TrimSpace(line) == "```":
			blocks = append(blocks, *in)
			in = nil
		case in != nil:
			in.Code += line + "\n"
		case marked && line == "```sh":
			in, marked = &quickstartBlock{Line: n + 1}, false
		case marked:
			return nil, fmt.Errorf("line %d: %s is not followed by a ```sh fence", n-1, quickstartMarker)
		case strings.TrimSpace(line) == quickstartMarker:
			marked = true
		}
	}
	if in != nil || marked {
		return nil, fmt.Errorf("the last marked block is not closed")
	}
	return blocks, sc.Err()
}

// The quickstart's marker and fences are read as a person reads them.
func TestQuickstartBlocks(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		doc     string
		want    []quickstartBlock
		wantErr string
	}{
		{"marked and unmarked", "# T\n```sh\nnot run\n```\n" + quickstartMarker + "\n```sh\na=1\necho $a\n```\ntext\n" + quickstartMarker + "\n```sh\nb\n```\n",
			[]quickstartBlock{{Line: 7, Code: "a=1\necho $a\n"}, {Line: 13, Code: "b\n"}}, ""},
		{"marker before prose", quickstartMarker + "\nprose\n", nil, "not followed by"},
		{"unclosed", quickstartMarker + "\n```sh\nx\n", nil, "not closed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := quickstartBlocks([]byte(tt.doc))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || !slices.Equal(got, tt.want) {
				t.Fatalf("blocks = %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
}

// docs/quickstart.md works as written: its marked blocks run in order, in
// one bash with `set -euo pipefail`, against a fresh server of the harness
// (BASE is its URL, DATABASE_URL its database for the operator commands,
// and the freshly built `platform` is first on PATH), and the message it
// sends ends sent (or delivered, or read) in the history, read back with
// the typed client and the key the doc created.
func TestQuickstart(t *testing.T) {
	t.Parallel()
	for _, tool := range []string{"bash", "curl", "jq"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("the quickstart test runs docs/quickstart.md with bash, curl and jq; %s is missing (%v): "+
				"apt-get install -y curl jq", tool, err)
		}
	}
	doc, err := os.ReadFile(quickstartPath)
	if err != nil {
		t.Fatal(err)
	}
	blocks, err := quickstartBlocks(doc)
	if err != nil {
		t.Fatalf("%s: %v", quickstartPath, err)
	}
	if len(blocks) < 9 {
		t.Fatalf("%s marks %d blocks to run; the steps from the network accounts to the history are at least 9", quickstartPath, len(blocks))
	}
	for _, b := range blocks {
		if strings.Contains(b.Code, "platform serve") || strings.Contains(b.Code, "go run") {
			t.Fatalf("%s:%d: a marked block starts a server; the test serves its own:\n%s", quickstartPath, b.Line, b.Code)
		}
	}

	e := Start(t, Options{Workers: true})
	bin := platformBinary(t)
	var script strings.Builder
	script.WriteString("set -euo pipefail\n")
	for i, b := range blocks {
		fmt.Fprintf(&script, "echo '>>> docs/quickstart.md block %d, line %d' >&2\n%s", i+1, b.Line, b.Code)
	}
	// What the test reads back: the key and the message the doc created.
	script.WriteString("echo \"QUICKSTART_KEY=$KEY\"\necho \"QUICKSTART_MESSAGE_ID=$MESSAGE_ID\"\n")
	path := filepath.Join(t.TempDir(), "quickstart.sh")
	if err := os.WriteFile(path, []byte(script.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", path)
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(),
		"BASE="+e.Server.URL,
		"DATABASE_URL="+e.DatabaseURL,
		"PATH="+filepath.Dir(bin)+string(os.PathListSeparator)+os.Getenv("PATH"),
		"LOG_LEVEL=warn",
	)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("docs/quickstart.md failed: %v\nstdout:\n%s\nstderr (the last >>> line names the block):\n%s", err, stdout.String(), stderr.String())
	}
	out := stdout.String()
	t.Logf("docs/quickstart.md printed:\n%s", out)
	for _, want := range []string{`"can_receive": true`, "active", `"status": "delivered"`, "Hello from the quickstart!",
		`"status": "read"`, `"direction": "inbound"`, "Thanks, see you then"} {
		if !strings.Contains(out, want) {
			t.Errorf("the quickstart's output lacks %q:\n%s", want, out)
		}
	}
	key := regexp.MustCompile(`(?m)^QUICKSTART_KEY=(bmk_\S+)$`).FindStringSubmatch(out)
	id := regexp.MustCompile(`(?m)^QUICKSTART_MESSAGE_ID=(\d+)$`).FindStringSubmatch(out)
	if key == nil || id == nil {
		t.Fatalf("the quickstart left no key or message id:\n%s", out)
	}
	messageID, err := strconv.ParseInt(id[1], 10, 64)
	if err != nil {
		t.Fatal(err)
	}

	// The history, read with the typed client: the recipient read the
	// message.
	c := e.Client(t, client.WithAPIKey(key[1]))
	rsp, err := c.TenantGetMessageWithResponse(t.Context(), messageID)
	if err != nil {
		t.Fatal(err)
	}
	if err := client.Check(rsp.StatusCode(), rsp.Body); err != nil {
		t.Fatalf("GET /api/v1/messages/%d: %v", messageID, err)
	}
	m := rsp.JSON200.Data
	if m.Status != "read" || m.Content != "Hello from the quickstart!" || m.SentAt == nil || m.ReadAt == nil {
		t.Fatalf("the quickstart's message is %s (sent_at %v, read_at %v, content %q), want read", m.Status, m.SentAt, m.ReadAt, m.Content)
	}
}
