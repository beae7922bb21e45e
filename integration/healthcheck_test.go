package integration

import (
	"os/exec"
	"strings"
	"testing"
)

// platform healthcheck (the image's container health check) exits 0 when
// the service answers /readyz with 200, and fails with the answer
// otherwise.
func TestHealthcheckCommand(t *testing.T) {
	t.Parallel()
	e := Start(t, Options{})
	bin := platformBinary(t)
	out, err := exec.CommandContext(t.Context(), bin, "healthcheck", "--url", e.Server.URL+"/readyz").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "ready") {
		t.Fatalf("healthcheck of a ready service: %v\n%s", err, out)
	}
	out, err = exec.CommandContext(t.Context(), bin, "healthcheck", "--url", e.Server.URL+"/no-such-thing").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "answered 404") {
		t.Fatalf("healthcheck of a 404: %v\n%s", err, out)
	}
	out, err = exec.CommandContext(t.Context(), bin, "healthcheck", "--url", "http://127.0.0.1:1/readyz", "--timeout", "1s").CombinedOutput()
	if err == nil {
		t.Fatalf("healthcheck of nothing listening succeeded:\n%s", out)
	}
}
