package integration

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"sort"
	"strings"
	"testing"
)

// module is this repository's module path.
const module = "github.com/bizmsg/platform"

// Floors of the floor plan (docs/design.md, §The floor plan). Every package
// of the module belongs to exactly one; a new package must be given one
// here, so the decision is made when the package is made.
const (
	floorMain     = "main"     // cmd/...: wiring and operator commands
	floorApp      = "app"      // platform/app: the one assembly
	floorDoor     = "door"     // central, tenant, web: the three front doors
	floorGlue     = "glue"     // platform/resource: handlers both APIs mount
	floorJobs     = "jobs"     // jobs: River workers
	floorService  = "service"  // business services, one per concept
	floorInfra    = "infra"    // infrastructure, no business rule
	floorTest     = "test"     // test harnesses
	floorEmbedded = "embedded" // embedded files only (docs, migrations)
	floorClient   = "client"   // client: the generated API client, for callers outside the service
)

// floors maps each package (path relative to the module) to its floor.
var floors = map[string]string{
	"cmd/platform":                   floorMain,
	"cmd/platform/bench":             floorMain,
	"cmd/platform/internal/term":     floorMain,
	"platform/app":                   floorApp,
	"central":                        floorDoor,
	"tenant":                         floorDoor,
	"web":                            floorDoor,
	"jobs":                           floorJobs,
	"platform/resource":              floorGlue,
	"platform/accounts":              floorService,
	"platform/audit":                 floorService,
	"platform/keys":                  floorService,
	"platform/senders":               floorService,
	"platform/messages":              floorService,
	"platform/acceptance":            floorService,
	"platform/delivery":              floorService,
	"platform/messages/messagestest": floorTest,
	"platform/lookup":                floorService,
	"platform/usage":                 floorService,
	"platform/webhooks":              floorService,
	"platform/templates":             floorService,
	"platform/consent":               floorService,
	"platform/yield":                 floorInfra,
	"platform/apidoc":                floorInfra,
	"platform/apikey":                floorInfra,
	"platform/apperr":                floorInfra,
	"platform/batch":                 floorInfra,
	"platform/clock":                 floorInfra,
	"platform/config":                floorInfra,
	"platform/defaults":              floorInfra,
	"platform/db":                    floorInfra,
	"platform/devsecrets":            floorInfra,
	"platform/httpx":                 floorInfra,
	"platform/jsonenc":               floorInfra,
	"platform/metrics":               floorInfra,
	"platform/migrate":               floorInfra,
	"platform/network":               floorInfra,
	"platform/network/builtin":       floorInfra,
	"platform/network/httpnet":       floorInfra,
	"platform/network/networktest":   floorTest,
	"platform/ops":                   floorInfra,
	"platform/page":                  floorInfra,
	"platform/pace":                  floorInfra,
	"platform/password":              floorInfra,
	"platform/phone":                 floorInfra,
	"platform/queue":                 floorInfra,
	"platform/ratelimit":             floorInfra,
	"platform/throttle":              floorInfra,
	"platform/token":                 floorInfra,
	"platform/dbtest":                floorTest,
	"platform/fuzzcheck":             floorTest,
	"integration":                    floorTest,
	"docs":                           floorEmbedded,
	"migrations":                     floorEmbedded,
	"client":                         floorClient,
}

// allowed says which floors a floor's packages may import (besides their
// own floor where sameFloor allows it). Doors never import each other;
// services and infrastructure never import a door, the workers or the
// assembly; infrastructure imports no service.
var allowed = map[string][]string{
	floorMain:     {floorApp, floorDoor, floorGlue, floorJobs, floorService, floorInfra, floorEmbedded},
	floorApp:      {floorDoor, floorGlue, floorJobs, floorService, floorInfra, floorEmbedded},
	floorDoor:     {floorGlue, floorService, floorInfra},
	floorGlue:     {floorService, floorInfra},
	floorJobs:     {floorService, floorInfra},
	floorService:  {floorService, floorInfra, floorEmbedded},
	floorInfra:    {floorInfra, floorEmbedded},
	floorTest:     {floorApp, floorDoor, floorGlue, floorJobs, floorService, floorInfra, floorEmbedded, floorTest, floorMain, floorClient},
	floorEmbedded: {},
	floorClient:   {},
}

// sameFloor lists the floors whose packages may import each other.
var sameFloor = map[string]bool{floorMain: true, floorService: true, floorInfra: true, floorTest: true}

// pkgImports is a package and its imports within the module, both relative
// to the module path.
type pkgImports struct {
	Path    string
	Imports []string
}

// violations returns every import of pkgs the floor plan forbids, and every
// package that has no floor, as sentences.
func violations(pkgs []pkgImports) []string {
	var out []string
	for _, p := range pkgs {
		from, ok := floors[p.Path]
		if !ok {
			out = append(out, fmt.Sprintf("%s has no floor: add it to floors in integration/architecture_test.go", p.Path))
			continue
		}
		for _, imp := range p.Imports {
			to, ok := floors[imp]
			if !ok {
				continue // reported as the package's own entry
			}
			if from == to && !sameFloor[from] {
				out = append(out, fmt.Sprintf("%s (%s) imports %s: %ss never import each other", p.Path, from, imp, from))
				continue
			}
			if from != to && !slices.Contains(allowed[from], to) {
				out = append(out, fmt.Sprintf("%s (%s) imports %s (%s): the %s floor may not import the %s floor", p.Path, from, imp, to, from, to))
			}
		}
	}
	sort.Strings(out)
	return out
}

// modulePackages lists the module's packages and their non-test imports
// within the module, with go list.
func modulePackages(t *testing.T) []pkgImports {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), "go", "list", "-json=ImportPath,Imports", module+"/...")
	cmd.Dir = ".."
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("go list: %v\n%s", err, ee.Stderr)
		}
		t.Fatalf("go list: %v", err)
	}
	var pkgs []pkgImports
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p struct {
			ImportPath string
			Imports    []string
		}
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("decode go list: %v", err)
		}
		rel := strings.TrimPrefix(strings.TrimPrefix(p.ImportPath, module), "/")
		pi := pkgImports{Path: rel}
		for _, imp := range p.Imports {
			if r, ok := strings.CutPrefix(imp, module+"/"); ok {
				pi.Imports = append(pi.Imports, r)
			}
		}
		pkgs = append(pkgs, pi)
	}
	if len(pkgs) < 20 {
		t.Fatalf("go list found only %d packages", len(pkgs))
	}
	return pkgs
}

// TestArchitecture holds the module's import graph to the floor plan.
func TestArchitecture(t *testing.T) {
	t.Parallel()
	if v := violations(modulePackages(t)); len(v) > 0 {
		t.Fatalf("the import graph breaks the floor plan:\n  %s", strings.Join(v, "\n  "))
	}
}

// TestArchitectureRules shows the check catches each kind of forbidden
// import, so a green TestArchitecture means something.
func TestArchitectureRules(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		pkg  pkgImports
		want string
	}{
		{"door imports door", pkgImports{"web", []string{"central"}}, "doors never import each other"},
		{"service imports jobs", pkgImports{"platform/messages", []string{"jobs"}}, "the service floor may not import the jobs floor"},
		{"service imports door", pkgImports{"platform/senders", []string{"tenant"}}, "the service floor may not import the door floor"},
		{"infra imports service", pkgImports{"platform/queue", []string{"platform/messages"}}, "the infra floor may not import the service floor"},
		{"jobs imports door", pkgImports{"jobs", []string{"web"}}, "the jobs floor may not import the door floor"},
		{"door imports app", pkgImports{"tenant", []string{"platform/app"}}, "the door floor may not import the app floor"},
		{"unknown package", pkgImports{"platform/newthing", nil}, "has no floor"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			v := violations([]pkgImports{tt.pkg})
			if len(v) != 1 || !strings.Contains(v[0], tt.want) {
				t.Fatalf("violations = %q, want one containing %q", v, tt.want)
			}
		})
	}
	if v := violations([]pkgImports{{"jobs", []string{"platform/messages", "platform/queue"}}, {"platform/messages", []string{"platform/senders", "platform/queue"}}}); len(v) != 0 {
		t.Fatalf("allowed imports reported: %q", v)
	}
}
