package integration

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	gotypes "go/types"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
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
	"web/accesspages":                floorDoor,
	"web/campaignpages":              floorDoor,
	"web/optoutpages":                floorDoor,
	"web/templatepages":              floorDoor,
	"web/webhookpages":               floorDoor,
	"jobs":                           floorJobs,
	"platform/resource":              floorGlue,
	"platform/accounts":              floorService,
	"platform/audit":                 floorService,
	"platform/keys":                  floorService,
	"platform/senders":               floorService,
	"platform/consent":               floorService,
	"platform/messages":              floorService,
	"platform/acceptance":            floorService,
	"platform/idempotency":           floorService,
	"platform/sendrequest":           floorService,
	"platform/delivery":              floorService,
	"platform/messages/messagestest": floorTest,
	"platform/lookup":                floorService,
	"platform/usage":                 floorService,
	"platform/webhooks":              floorService,
	"platform/templates":             floorService,
	"platform/campaigns":             floorService,
	"platform/campaignrelease":       floorService,
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
	"platform/drain":                 floorInfra,
	"platform/joboutbox":             floorInfra,
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
	"platform/sqlq":                  floorInfra,
	"platform/ratelimit":             floorInfra,
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

// sameFloor lists the floors whose packages may import each other. Besides
// these, a door's subpackage (a group of the dashboard's pages, web/...)
// may import its door (web, the dashboard's core), and nothing else of the
// door floor.
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
			if from == floorDoor && to == floorDoor && strings.HasPrefix(p.Path, imp+"/") {
				continue // a door's page package renders through its door's core
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

// Line budgets of production Go code (test files aside), so that a file
// and a package can each be read in one sitting.
const (
	maxFileLines    = 600
	maxPackageLines = 2500
)

// unbudgeted are the packages the line budgets do not hold, each with its
// reason.
var unbudgeted = map[string]string{
	"client":             "generated by oapi-codegen from docs/openapi.yaml; callers outside the service read its API, not its code",
	"cmd/platform/bench": "the benchmark commands: measuring tools beside the service, not part of it",
}

// statusFloors are the floors whose packages may not use net/http's status
// codes (http.StatusOK, http.StatusText, ...): their answers are domain
// values (results, apperr kinds) that the doors render as HTTP. The
// floors that may are those that speak HTTP: main and the assembly
// (operator endpoints), the doors and their glue (platform/resource), and
// infrastructure, which renders no business answer of its own but is the
// doors' HTTP machinery (httpx maps apperr kinds to statuses; apidoc, ops
// and metrics serve their pages) or an HTTP client or server of a network
// (platform/network/httpnet, the network adapters).
var statusFloors = map[string]bool{floorService: true, floorJobs: true}

// httpClients are the packages of the status floors that may use net/http's
// status codes anyway, because they are HTTP clients, each with its
// reason.
var httpClients = map[string]string{
	"platform/webhooks": "posts events to the organization's endpoints and judges each answer by its status",
}

// goFile is what the rules read of a production Go file.
type goFile struct {
	// Name is the file's path relative to the module.
	Name string
	// Lines is its number of lines.
	Lines int
	// Statuses are the names of net/http's status codes it uses, as
	// written (http.StatusAccepted), sorted, once each.
	Statuses []string
	// Constructors are its constructors (constructorsOf).
	Constructors []constructor
	// SQL are its string literals (or concatenations of them) that hold
	// SQL (sqlLiterals).
	SQL []string
}

// pkgFiles is a package (relative to the module path) and its production
// Go files.
type pkgFiles struct {
	Path  string
	Files []goFile
}

// readGoFile counts the lines of a Go file and finds its uses of net/http's
// status codes: the selectors Status... on the name the file imports
// net/http by (http, or its alias); a dot import of net/http counts as a
// use, since nothing then shows where its names are used.
func readGoFile(name string, src []byte) (goFile, error) {
	f := goFile{Name: name, Lines: bytes.Count(src, []byte("\n"))}
	if len(src) > 0 && src[len(src)-1] != '\n' {
		f.Lines++
	}
	af, err := parser.ParseFile(token.NewFileSet(), name, src, parser.SkipObjectResolution)
	if err != nil {
		return f, fmt.Errorf("parse %s: %w", name, err)
	}
	f.Constructors = constructorsOf(path.Dir(name), af)
	f.SQL = sqlLiterals(af)
	local := ""
	for _, imp := range af.Imports {
		if p, _ := strconv.Unquote(imp.Path.Value); p == "net/http" {
			local = "http"
			if imp.Name != nil {
				local = imp.Name.Name
			}
		}
	}
	switch local {
	case "", "_":
		return f, nil
	case ".":
		f.Statuses = []string{`. "net/http"`}
		return f, nil
	}
	ast.Inspect(af, func(n ast.Node) bool {
		if sel, ok := n.(*ast.SelectorExpr); ok {
			if x, ok := sel.X.(*ast.Ident); ok && x.Name == local && strings.HasPrefix(sel.Sel.Name, "Status") {
				f.Statuses = append(f.Statuses, local+"."+sel.Sel.Name)
			}
		}
		return true
	})
	slices.Sort(f.Statuses)
	f.Statuses = slices.Compact(f.Statuses)
	return f, nil
}

// fileViolations returns, by package, what breaks the line budgets and the
// status rule, as sentences.
func fileViolations(pkgs []pkgFiles) map[string][]string {
	out := map[string][]string{}
	for _, p := range pkgs {
		_, exempt := unbudgeted[p.Path]
		total := 0
		for _, f := range p.Files {
			total += f.Lines
			if !exempt && f.Lines > maxFileLines {
				out[p.Path] = append(out[p.Path], fmt.Sprintf("%s has %d lines, over the %d a production file may have: split it along its seams",
					f.Name, f.Lines, maxFileLines))
			}
			if _, client := httpClients[p.Path]; len(f.Statuses) > 0 && statusFloors[floors[p.Path]] && !client {
				out[p.Path] = append(out[p.Path], fmt.Sprintf("%s (%s) uses net/http's status codes (%s): return a domain value and let the door render it",
					f.Name, floors[p.Path], strings.Join(f.Statuses, ", ")))
			}
		}
		if !exempt && total > maxPackageLines {
			out[p.Path] = append(out[p.Path], fmt.Sprintf("%s has %d production lines, over the %d a package may have: split it along its seams",
				p.Path, total, maxPackageLines))
		}
	}
	return out
}

// allViolations returns the violations of byPkg, sorted.
func allViolations(byPkg map[string][]string) []string {
	var out []string
	for _, v := range byPkg {
		out = append(out, v...)
	}
	sort.Strings(out)
	return out
}

// modulePackages lists the module's packages with their non-test imports
// within the module and their production Go files, with go list.
func modulePackages(t *testing.T) ([]pkgImports, []pkgFiles) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), "go", "list",
		"-json=ImportPath,Imports,Dir,GoFiles,CgoFiles,IgnoredGoFiles", module+"/...")
	cmd.Dir = ".."
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("go list: %v\n%s", err, ee.Stderr)
		}
		t.Fatalf("go list: %v", err)
	}
	var (
		pkgs  []pkgImports
		files []pkgFiles
	)
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p struct {
			ImportPath, Dir                   string
			Imports                           []string
			GoFiles, CgoFiles, IgnoredGoFiles []string
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
		pf := pkgFiles{Path: rel}
		for _, name := range slices.Concat(p.GoFiles, p.CgoFiles, p.IgnoredGoFiles) {
			if strings.HasSuffix(name, "_test.go") {
				continue
			}
			src, err := os.ReadFile(filepath.Join(p.Dir, name))
			if err != nil {
				t.Fatal(err)
			}
			f, err := readGoFile(path.Join(rel, name), src)
			if err != nil {
				t.Fatal(err)
			}
			pf.Files = append(pf.Files, f)
		}
		files = append(files, pf)
	}
	if len(pkgs) < 20 {
		t.Fatalf("go list found only %d packages", len(pkgs))
	}
	return pkgs, files
}

// TestArchitecture holds the module's import graph to the floor plan, and
// its production code to the line budgets and to rendering HTTP only in
// the doors.
func TestArchitecture(t *testing.T) {
	t.Parallel()
	pkgs, files := modulePackages(t)
	v := violations(pkgs)
	v = append(v, allViolations(fileViolations(files))...)
	v = append(v, constructorViolations(files)...)
	if len(v) > 0 {
		t.Fatalf("the code breaks the floor plan:\n  %s", strings.Join(v, "\n  "))
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
		{"door's page package imports another door", pkgImports{"web/webhookpages", []string{"tenant"}}, "doors never import each other"},
		{"door's page packages import each other", pkgImports{"web/webhookpages", []string{"web/accesspages"}}, "doors never import each other"},
		{"door imports its page package", pkgImports{"web", []string{"web/webhookpages"}}, "doors never import each other"},
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
	if v := violations([]pkgImports{{"jobs", []string{"platform/messages", "platform/queue"}}, {"platform/messages", []string{"platform/senders", "platform/queue"}},
		{"web/webhookpages", []string{"web", "platform/webhooks"}}}); len(v) != 0 {
		t.Fatalf("allowed imports reported: %q", v)
	}
}

// goSource is a Go file of package pkg of n lines: the package clause, the
// import of net/http as name ("" for none, "http" for the plain import) and
// body, padded with comment lines.
func goSource(t *testing.T, n int, name, body string) []byte {
	t.Helper()
	src := "package p\n"
	switch name {
	case "":
	case "http":
		src += "import \"net/http\"\n"
	default:
		src += "import " + name + " \"net/http\"\n"
	}
	src += body
	if lines := strings.Count(src, "\n"); lines < n {
		src += strings.Repeat("//\n", n-lines)
	}
	return []byte(src)
}

// TestArchitectureFileRules shows the line budgets and the status rule
// catch what they forbid, from Go source, and let pass what they allow.
func TestArchitectureFileRules(t *testing.T) {
	t.Parallel()
	file := func(t *testing.T, pkg string, lines int, httpName, body string) goFile {
		t.Helper()
		f, err := readGoFile(pkg+"/f.go", goSource(t, lines, httpName, body))
		if err != nil {
			t.Fatal(err)
		}
		if f.Lines != lines {
			t.Fatalf("readGoFile counted %d lines of %d", f.Lines, lines)
		}
		return f
	}
	const status = "var _ = http.StatusAccepted\n"
	tests := []struct {
		name     string
		pkg      string
		lines    []int // one file of each length
		httpName string
		body     string
		want     string // "" for no violation
	}{
		{"file over 600 lines", "platform/clock", []int{601}, "", "", "has 601 lines, over the 600"},
		{"file of 600 lines", "platform/clock", []int{600}, "", "", ""},
		{"door file over 600 lines", "web/webhookpages", []int{700}, "", "", "has 700 lines, over the 600"},
		{"package over 2,500 lines", "platform/senders", []int{600, 600, 600, 600, 101}, "", "", "has 2501 production lines, over the 2500"},
		{"package of 2,500 lines", "platform/senders", []int{600, 600, 600, 600, 100}, "", "", ""},
		{"generated client", "client", []int{600, 600, 600, 600, 700}, "", "", ""},
		{"bench", "cmd/platform/bench", []int{1400, 1400}, "", "", ""},
		{"service uses a status", "platform/senders", []int{10}, "http", status, "uses net/http's status codes (http.StatusAccepted)"},
		{"service uses StatusText", "platform/accounts", []int{10}, "http", "var _ = http.StatusText(404)\n", "(http.StatusText)"},
		{"service uses a status under an alias", "platform/consent", []int{10}, "nethttp", "var _ = nethttp.StatusOK\n", "(nethttp.StatusOK)"},
		{"service dot-imports net/http", "platform/usage", []int{10}, ".", "var _ = StatusOK\n", `(. "net/http")`},
		{"jobs use a status", "jobs", []int{10}, "http", status, "(jobs) uses net/http's status codes"},
		{"service posts without statuses", "platform/senders", []int{10}, "http", "var _ = http.MethodPost\n", ""},
		{"webhook posting", "platform/webhooks", []int{10}, "http", "var _ = http.StatusOK\n", ""},
		{"door renders a status", "tenant", []int{10}, "http", status, ""},
		{"glue renders a status", "platform/resource", []int{10}, "http", status, ""},
		{"httpx renders a status", "platform/httpx", []int{10}, "http", status, ""},
		{"network adapter", "platform/network/httpnet", []int{10}, "http", status, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := pkgFiles{Path: tt.pkg}
			for _, n := range tt.lines {
				p.Files = append(p.Files, file(t, tt.pkg, n, tt.httpName, tt.body))
			}
			v := allViolations(fileViolations([]pkgFiles{p}))
			if tt.want == "" && len(v) != 0 {
				t.Fatalf("violations = %q, want none", v)
			}
			if tt.want != "" && (len(v) != 1 || !strings.Contains(v[0], tt.want)) {
				t.Fatalf("violations = %q, want one containing %q", v, tt.want)
			}
		})
	}

}

// constructorShapes are the constructors that keep a shape other than
// New(Config) (*T, error), each with its reason (docs/design.md,
// §Constructors). A new exception is decided here, where it is seen.
var constructorShapes = map[string]string{
	"platform/app.New":              "the assembly: it connects to the database and migrates while it builds, under the context it is given",
	"platform/apperr.New":           "an error value, as errors.New makes one: nothing to depend on, nothing to fail",
	"platform/apikey.NewHasher":     "a primitive over one secret, as crypto/hmac.New: the pepper is all it takes, and its length is checked",
	"platform/apikey.NewSealer":     "a primitive over one secret, as crypto/cipher.NewGCM: the key is all it takes, and its length is checked",
	"platform/batch.New":            "a generic building block: its Func is what it does, not a dependency, and its Config (embedded in its users' configs) has a default for every field, so it cannot fail",
	"platform/clock.NewFake":        "a test clock: a value set to a time",
	"platform/metrics.New":          "nothing to configure and nothing to fail",
	"platform/ratelimit.NewLocal":   "every LocalConfig field has a default and none is required: nothing to fail",
	"platform/pace.NewLocal":        "every Config field has a default and none is required: nothing to fail",
	"platform/messages.NewCounters": "the daily-limit statements every stage shares: nothing to configure, it holds the package's embedded named queries, whose loading is its one failure",
	"platform/senders.NewCentral":   "the job outbox's applier of sender_central rows: nothing to configure, it holds the package's embedded named queries, whose loading is its one failure",
}

// constructor is what the shape rule reads of an exported function whose
// name begins with New and whose first result is a pointer to a type of
// its own package.
type constructor struct {
	// Name is the package (relative to the module) and the function:
	// platform/keys.New.
	Name string
	// Params are the types of its parameters, as written.
	Params []string
	// Results are the types of its results, as written.
	Results []string
}

// constructorsOf finds the constructors of af, a file of package pkg.
func constructorsOf(pkg string, af *ast.File) []constructor {
	typesOf := func(fl *ast.FieldList) []string {
		if fl == nil {
			return nil
		}
		var out []string
		for _, f := range fl.List {
			for range max(len(f.Names), 1) {
				out = append(out, gotypes.ExprString(f.Type))
			}
		}
		return out
	}
	var out []constructor
	for _, d := range af.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || fd.Recv != nil || !fd.Name.IsExported() || !strings.HasPrefix(fd.Name.Name, "New") {
			continue
		}
		res := typesOf(fd.Type.Results)
		if len(res) == 0 {
			continue
		}
		if elem, ok := strings.CutPrefix(res[0], "*"); !ok || strings.Contains(elem, ".") {
			continue // not a pointer to a type of its own package
		}
		out = append(out, constructor{Name: pkg + "." + fd.Name.Name, Params: typesOf(fd.Type.Params), Results: res})
	}
	return out
}

// constructorViolations returns the constructors of pkgs that have neither
// the one shape, New(Config) (*T, error) (one parameter of a Config type,
// a pointer and an error out), nor a reason in constructorShapes, as
// sentences. Test harnesses and the packages the line budgets do not hold
// (generated, or tools beside the service) are not read.
func constructorViolations(pkgs []pkgFiles) []string {
	var out []string
	for _, p := range pkgs {
		if _, exempt := unbudgeted[p.Path]; exempt || floors[p.Path] == floorTest {
			continue
		}
		for _, f := range p.Files {
			for _, c := range f.Constructors {
				// A generic constructor's Config has its type arguments:
				// New(Config[K]) (*Runner[K], error) has the shape.
				oneConfig := len(c.Params) == 1 && strings.HasSuffix(strings.SplitN(c.Params[0], "[", 2)[0], "Config")
				if oneConfig && len(c.Results) == 2 && c.Results[1] == "error" {
					continue
				}
				if _, ok := constructorShapes[c.Name]; ok {
					continue
				}
				out = append(out, fmt.Sprintf("%s(%s) (%s) in %s is not New(Config) (*T, error): take one Config and check its required fields, or give the reason in constructorShapes",
					c.Name, strings.Join(c.Params, ", "), strings.Join(c.Results, ", "), f.Name))
			}
		}
	}
	sort.Strings(out)
	return out
}

// TestArchitectureConstructorRules shows the shape rule catches each
// constructor that strays from New(Config) (*T, error), from Go source,
// and lets pass the one shape, the listed exceptions and functions that
// construct nothing of their package.
func TestArchitectureConstructorRules(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		pkg  string
		src  string
		want string // "" for no violation
	}{
		{"the one shape", "platform/usage", "func New(cfg Config) (*Service, error) { return nil, nil }", ""},
		{"a second type's config", "platform/ratelimit", "func NewShared(cfg SharedConfig) (*Shared, error) { return nil, nil }", ""},
		{"a dependency beside the config", "platform/keys", "func New(pool *pgxpool.Pool, cfg Config) (*Service, error) { return nil, nil }",
			"platform/keys.New(*pgxpool.Pool, Config) (*Service, error)"},
		{"dependencies without a config", "platform/usage", "func New(pool *pgxpool.Pool, clk clock.Clock) (*Service, error) { return nil, nil }",
			"platform/usage.New(*pgxpool.Pool, clock.Clock)"},
		{"no error", "platform/audit", "func New(cfg Config) *Service { return nil }", "platform/audit.New(Config) (*Service)"},
		{"another name", "central", "func NewAPI(a, b *Service) (*API, error) { return nil, nil }", "central.NewAPI(*Service, *Service) (*API, error)"},
		{"a door too", "tenant", "func New(keys *Keys) (*API, error) { return nil, nil }", "tenant.New(*Keys)"},
		{"a listed exception", "platform/batch", "func New[K comparable](run Func[K], cfg Config) *Batcher[K] { return nil }", ""},
		{"another package's type", "platform/queue", "func NewClient(pool *pgxpool.Pool) (*river.Client, error) { return nil, nil }", ""},
		{"not a pointer", "platform/db", "func NewTenant(id int64) (Tenant, error) { return Tenant{}, nil }", ""},
		{"unexported", "platform/usage", "func newService(pool *pgxpool.Pool) *Service { return nil }", ""},
		{"a method", "platform/usage", "func (s *Service) NewReport(q Query) *Report { return nil }", ""},
		{"a test harness", "platform/dbtest", "func NewCluster(t testing.TB) *Cluster { return nil }", ""},
		{"the generated client", "client", "func NewClient(server string) (*Client, error) { return nil, nil }", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f, err := readGoFile(tt.pkg+"/f.go", []byte("package p\n"+tt.src+"\n"))
			if err != nil {
				t.Fatal(err)
			}
			v := constructorViolations([]pkgFiles{{Path: tt.pkg, Files: []goFile{f}}})
			if tt.want == "" && len(v) != 0 {
				t.Fatalf("violations = %q, want none", v)
			}
			if tt.want != "" && (len(v) != 1 || !strings.Contains(v[0], tt.want)) {
				t.Fatalf("violations = %q, want one containing %q", v, tt.want)
			}
		})
	}
}
