package integration

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// `platform bench river-node`, tiny: River per worker node beside the job
// outbox on a 3-node Citus cluster the bench starts (docs/scaling.md,
// §Jobs). It holds the findings the platform's choice rests on, so that
// the test fails when one stops being true (a River or Citus upgrade):
//   - River's migrations fail in a schema created distributed; migrated
//     regular and then distributed, a River schema sits on a worker;
//   - a send's message and its job in the node's River commit on that one
//     worker but in two phases, the outbox's in one;
//   - River's fetch and completion fail on a node schema through the
//     coordinator (non-IMMUTABLE functions in COALESCE) and work on the
//     coordinator's river schema, so no job of River per node is worked;
//   - with a worker down, the other worker's tenant sends by both paths
//     (the outbox's job reaches the coordinator's River) and the stopped
//     worker's by neither;
//   - a tenant schema's move leaves its queued jobs in the old node's
//     River, and a send into that River then spans two workers.
func TestBenchRiverNode(t *testing.T) {
	t.Parallel()
	script, err := filepath.Abs("../scripts/citus-cluster")
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "river-node.json")
	stdout, _ := runBench(t, "river-node", "-citus-script", script, "-duration", "1s", "-rounds", "1", "-concurrency", "2",
		"-move-jobs", "20", "-out", out)
	for _, want := range []string{"== node River schemas", "== River's statements on a node schema", "outbox median",
		"River per node median", "== the jobs worked", "== a worker node down", "== a tenant schema moved away from its node's River"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, stdout)
		}
	}
	raw, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	type step struct {
		Step, Error, Detail string
	}
	type path struct {
		Median struct {
			Jobs     int64 `json:"jobs"`
			TwoPhase int64 `json:"two_phase"`
			Errors   int64 `json:"errors"`
		} `json:"median"`
		WorkRate float64 `json:"work_rate"`
		WorkErr  string  `json:"work_error"`
	}
	var rep struct {
		Setup   []step `json:"setup"`
		Probe   []step `json:"probe"`
		Outbox  path   `json:"outbox"`
		PerNode path   `json:"per_node"`
		Down    struct {
			OutboxUp        string `json:"outbox_up"`
			PerNodeUp       string `json:"per_node_up"`
			OutboxDown      string `json:"outbox_down"`
			PerNodeDown     string `json:"per_node_down"`
			OutboxUpInRiver bool   `json:"outbox_up_in_river"`
		} `json:"down"`
		Move struct {
			Queued      int64 `json:"queued"`
			Stranded    int64 `json:"stranded"`
			OldTwoPhase int64 `json:"old_two_phase"`
			NewTwoPhase int64 `json:"new_two_phase"`
		} `json:"move"`
	}
	if err := json.Unmarshal(raw, &rep); err != nil {
		t.Fatalf("decode %s: %v", out, err)
	}
	find := func(steps []step, prefix, contains string) step {
		for _, s := range steps {
			if strings.Contains(s.Step, prefix) && strings.Contains(s.Step, contains) {
				return s
			}
		}
		t.Fatalf("no step %q %q in %+v", prefix, contains, steps)
		return step{}
	}
	const notImmutable = "non-IMMUTABLE functions are not allowed in CASE or COALESCE"
	for _, s := range []string{"river_node1", "river_node2"} {
		if st := find(rep.Setup, s, "enable_schema_based_sharding on"); !strings.Contains(st.Error, "cannot insert multiple commands into a prepared statement") {
			t.Errorf("%s created distributed: %+v, want River's migration refused", s, st)
		}
		if st := find(rep.Setup, s, "citus_schema_distribute"); st.Error != "" || !strings.Contains(st.Detail, "in citus_schemas: true") {
			t.Errorf("%s migrated, then distributed: %+v, want a distributed schema", s, st)
		}
	}
	if st := find(rep.Probe, "InsertManyFastTx", "tenant's transaction"); st.Error != "" || st.Detail != "1 2PC records" {
		t.Errorf("message and job into the node's River: %+v, want committed in two phases on one worker", st)
	}
	for _, s := range []string{"fetch (JobGetAvailable", "complete (JobSetStateIfRunningMany"} {
		st := find(rep.Probe, "River's statement", s)
		if !strings.Contains(st.Error, notImmutable) || st.Detail != "on the coordinator's river schema: ok" {
			t.Errorf("%s: %+v, want refused on the node schema, run on the coordinator's", s, st)
		}
	}
	if o := rep.Outbox; o.Median.Jobs == 0 || o.Median.TwoPhase != 0 || o.Median.Errors != 0 || o.WorkErr != "" || o.WorkRate <= 0 {
		t.Errorf("outbox path %+v, want jobs sent in one phase and worked", o)
	}
	if p := rep.PerNode; p.Median.Jobs == 0 || p.Median.TwoPhase < p.Median.Jobs || p.Median.Errors != 0 || !strings.Contains(p.WorkErr, notImmutable) {
		t.Errorf("River per node %+v, want every send two-phase and no job worked", p)
	}
	if d := rep.Down; d.OutboxUp != "ok" || !d.OutboxUpInRiver || d.PerNodeUp != "ok" || d.OutboxDown == "ok" || d.PerNodeDown == "ok" {
		t.Errorf("worker down %+v, want the other worker's tenant sending by both paths and the stopped worker's by neither", d)
	}
	if m := rep.Move; m.Queued < 20 || m.Stranded < m.Queued || m.OldTwoPhase != 2 || m.NewTwoPhase != 1 {
		t.Errorf("move %+v, want the queued jobs left in the old node's River and a send into it on two workers", m)
	}
}
