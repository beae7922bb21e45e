package httpnet_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/bizmsg/platform/platform/apperr"
	"github.com/bizmsg/platform/platform/dbtest"
	"github.com/bizmsg/platform/platform/network"
	"github.com/bizmsg/platform/platform/network/builtin"
	"github.com/bizmsg/platform/platform/network/httpnet"
	"github.com/bizmsg/platform/platform/network/networktest"
)

func TestDecodeTemplateReviewed(t *testing.T) {
	t.Parallel()
	occurred := time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC)
	ev := httpnet.Event{ID: "evt_1", Type: httpnet.EventTemplateReviewed, OccurredAt: &occurred,
		Data: json.RawMessage(`{"reference":"tenant_3:template:7","status":"rejected","reason":"Too vague."}`)}
	d, err := httpnet.Decode(ev)
	if err != nil {
		t.Fatal(err)
	}
	v, ok := d.Verdict(time.Now())
	want := network.TemplateVerdict{Reference: "tenant_3:template:7", Status: "rejected", Reason: "Too vague.", At: occurred}
	if !ok || v != want {
		t.Fatalf("verdict %+v %v, want %+v", v, ok, want)
	}
	if _, ok := d.Receipt(time.Now()); ok {
		t.Error("a verdict decoded as a receipt")
	}
	ev.Data = json.RawMessage(`{"status":"archived"}`)
	_, err = httpnet.Decode(ev)
	e, ok := apperr.As(err)
	if !ok || len(e.Fields["data.reference"]) == 0 || len(e.Fields["data.status"]) == 0 {
		t.Fatalf("bad verdict: %v", err)
	}
}

// The Handler serves POST /v1/templates over the built-in network, whose
// verdict lands in its outbox.
func TestSubmitTemplateThroughHandler(t *testing.T) {
	t.Parallel()
	d, _ := dbtest.Migrated(t)
	net := networktest.Builtin(t, builtin.Config{DB: d})
	h, err := httpnet.NewHandler(httpnet.HandlerConfig{Network: net, Secret: secret})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	c, err := httpnet.New(httpnet.Config{BaseURL: srv.URL, Secret: secret})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := c.SubmitTemplate(ctx, network.Template{Reference: "tenant_1:template:1", Body: "Hi {{1}} {{2}} there."}); err != nil {
		t.Fatal(err)
	}
	err = c.SubmitTemplate(ctx, network.Template{Reference: "tenant_1:template:2", Body: " "})
	if pe := (*network.PermanentError)(nil); !network.IsPermanent(err) {
		t.Fatalf("an empty body: %v, want a %T", err, pe)
	}
	var rec networktest.Recorder
	if _, err := net.Drain(ctx, &rec, 0); err != nil {
		t.Fatal(err)
	}
	if v := rec.Verdicts(); len(v) != 1 || v[0].Status != network.TemplateRejected || v[0].Reason == "" {
		t.Fatalf("verdicts %+v", v)
	}
}
