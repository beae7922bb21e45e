package integration

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/riverqueue/river/rivertype"

	"github.com/bizmsg/platform/platform/network"
	"github.com/bizmsg/platform/platform/queue"
)

// An operator reads a failed message with its delivery job
// (platform admin message show) and retries the job once the cause is gone
// (platform admin jobs retry): a dry run changes nothing; the retry puts the
// network_error message back to queued and its job back in the queue, in
// one transaction, and the next delivery sends it.
func TestAdminMessageShowAndJobsRetry(t *testing.T) {
	t.Parallel()
	flaky := &flakyNetwork{}
	e := startMsg(t, Options{Network: func(base network.Network) network.Network { flaky.Network = base; return flaky }})
	org := e.Register(t)
	sid := e.activeSender(org, phoneN(1))
	e.recipient(phoneN(10))
	m := accepted(t, e.send(org, text(sid, phoneN(10), "after the outage")))
	e.waitMoved(org)
	ctx := context.Background()
	job, err := queue.DeliveryJobOf(ctx, e.App.River, org.ID, m.ID)
	if err != nil || job == nil {
		t.Fatalf("delivery job: %v %v", job, err)
	}
	args := queue.DeliverArgs{TenantRef: queue.TenantRef{OrgID: org.ID, Schema: org.Tenant.Schema}, MessageID: m.ID, SenderID: sid}

	// The last attempt meets the outage: the message fails network_error.
	flaky.failing.Store(true)
	last := queue.DeliveryAttempt{JobID: job.ID, Attempt: queue.DefaultDeliveryMaxAttempts, MaxAttempts: queue.DefaultDeliveryMaxAttempts}
	if _, err := e.App.Delivery.DeliverMessage(ctx, args, last); !network.IsTransient(err) {
		t.Fatalf("last attempt: %v, want the network's error", err)
	}
	flaky.failing.Store(false)
	if got := e.getMessage(org, m.ID); got.Status != "failed" || got.ErrorCode == nil || *got.ErrorCode != "network_error" {
		t.Fatalf("after the last attempt: %+v", got)
	}
	// An operator stops the job (River discards it the same way when its
	// attempts run out, which takes hours of backoff to reach here).
	if _, err := e.App.River.JobCancel(ctx, job.ID); err != nil {
		t.Fatal(err)
	}

	bin := platformBinary(t)
	runErr := func(args ...string) (string, error) {
		cmd := exec.CommandContext(t.Context(), bin, args...)
		cmd.Env = append(os.Environ(),
			"DATABASE_URL="+e.DatabaseURL,
			"LOG_LEVEL=error",
			"JWT_SECRET="+strings.Repeat("j", 32),
			"API_KEY_PEPPER="+strings.Repeat("p", 32),
		)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	run := func(args ...string) string {
		t.Helper()
		out, err := runErr(args...)
		if err != nil {
			t.Fatalf("platform %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return out
	}
	// An organization that does not exist is named as such.
	if out, err := runErr("admin", "message", "show", "--id", fmt.Sprint(m.ID), "--org", fmt.Sprint(org.ID+1000)); err == nil ||
		!strings.Contains(out, fmt.Sprintf("no organization %d", org.ID+1000)) {
		t.Fatalf("message show of another organization: %v\n%s", err, out)
	}
	show := run("admin", "message", "show", "--id", fmt.Sprint(m.ID), "--org", fmt.Sprint(org.ID))
	for _, want := range []string{
		fmt.Sprintf("message %d of organization %d", m.ID, org.ID), "status      failed", "network_error",
		fmt.Sprintf("delivery job %d (queue delivery, state cancelled)", job.ID),
	} {
		if !strings.Contains(show, want) {
			t.Fatalf("message show lacks %q:\n%s", want, show)
		}
	}

	dry := run("admin", "jobs", "retry", "--kind", "deliver", "--state", "cancelled", "--since", "1h", "--dry-run")
	if !strings.Contains(dry, fmt.Sprintf("job %d: would retry", job.ID)) || !strings.Contains(dry, "would retry 1 deliver job(s)") {
		t.Fatalf("dry run:\n%s", dry)
	}
	if got := e.getMessage(org, m.ID); got.Status != "failed" {
		t.Fatalf("after the dry run: %s", got.Status)
	}
	if none := run("admin", "jobs", "retry", "--kind", "otp", "--state", "cancelled", "--since", "2020-01-01T00:00:00Z"); !strings.Contains(none, "retried 0 otp job(s)") {
		t.Fatalf("otp retry:\n%s", none)
	}

	out := run("admin", "jobs", "retry", "--kind", "deliver", "--state", "cancelled", "--since", "1h")
	if !strings.Contains(out, "retried 1 deliver job(s); 0 left alone") {
		t.Fatalf("retry:\n%s", out)
	}
	got := e.getMessage(org, m.ID)
	if got.Status != "queued" || got.ErrorCode != nil || got.Delivery == nil || got.Delivery.State != queue.DeliveryWaiting {
		t.Fatalf("after the retry: %+v %+v", got, got.Delivery)
	}
	row, err := e.App.River.JobGet(ctx, job.ID)
	if err != nil || row.State != rivertype.JobStateAvailable {
		t.Fatalf("job after the retry: %+v %v", row, err)
	}
	if _, err := e.App.Delivery.DeliverMessage(ctx, args, queue.DeliveryAttempt{JobID: job.ID, Attempt: 1, MaxAttempts: 25}); err != nil {
		t.Fatalf("delivery after the retry: %v", err)
	}
	if got := e.getMessage(org, m.ID); got.Status != "delivered" {
		t.Fatalf("after the retried delivery: %s", got.Status)
	}
	// Nothing is left to retry.
	if again := run("admin", "jobs", "retry", "--kind", "deliver", "--state", "cancelled", "--since", "1h"); !strings.Contains(again, "retried 0 deliver job(s)") {
		t.Fatalf("second retry:\n%s", again)
	}
}

// An operator command run without the secrets set (as on a developer's
// machine) neither warns about development secrets nor writes any: it reads
// what the service kept, and the database it opens is the service's, which
// it does not change.
func TestOperatorCommandWritesNoSecrets(t *testing.T) {
	t.Parallel()
	e := startMsg(t, Options{})
	org := e.Register(t)
	sid := e.activeSender(org, phoneN(1))
	e.recipient(phoneN(10))
	m := accepted(t, e.send(org, text(sid, phoneN(10), "hello")))
	cmd := exec.CommandContext(t.Context(), platformBinary(t), "admin", "message", "show", "--id", fmt.Sprint(m.ID), "--org", fmt.Sprint(org.ID))
	cmd.Env = append(os.Environ(), "DATABASE_URL="+e.DatabaseURL, "LOG_LEVEL=info", "JWT_SECRET=", "API_KEY_PEPPER=")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("platform admin message show: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), fmt.Sprintf("message %d of organization %d", m.ID, org.ID)) {
		t.Fatalf("message show printed:\n%s", out)
	}
	if strings.Contains(string(out), "secret") || strings.Contains(string(out), "WARN") {
		t.Fatalf("the operator command warned:\n%s", out)
	}
	var kept int
	if err := e.App.DB.Pool.QueryRow(t.Context(), `SELECT count(*) FROM central.dev_secrets`).Scan(&kept); err != nil {
		t.Fatal(err)
	}
	if kept != 0 {
		t.Fatalf("the operator command wrote %d development secrets", kept)
	}
}
