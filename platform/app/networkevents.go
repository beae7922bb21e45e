package app

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/bizmsg/platform/platform/apperr"
	"github.com/bizmsg/platform/platform/httpx"
	"github.com/bizmsg/platform/platform/messages"
	"github.com/bizmsg/platform/platform/network"
	"github.com/bizmsg/platform/platform/network/builtin"
	"github.com/bizmsg/platform/platform/network/httpnet"
	"github.com/bizmsg/platform/platform/templates"
)

// NetworkEventsPath is where the external network posts its signed events.
const NetworkEventsPath = "/api/v1/network/events"

// networkEventRoutes mounts the network's event callback, only with
// NETWORK=http: the built-in network has no one to call it.
func (a *App) networkEventRoutes(r *gin.Engine) {
	if a.cfg.Network != "http" {
		return
	}
	r.POST(NetworkEventsPath, a.networkEvent)
}

// networkEvent answers POST /api/v1/network/events (docs/network-http.md
// "Events"): it verifies the signature over the raw body (401), decodes the
// event (415, 400, 422) and applies it; 200 {"id", "type", "status"} with
// status applied, unchanged (a repeat) or ignored (nothing of ours).
func (a *App) networkEvent(c *gin.Context) {
	body, err := io.ReadAll(c.Request.Body)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			httpx.Fail(c, apperr.Wrap(err, apperr.KindTooLarge, "payload_too_large", ""))
			return
		}
		httpx.Fail(c, apperr.Wrap(err, apperr.KindMalformed, "malformed_json", "The request body could not be read."))
		return
	}
	// Wall clock, not the app's: the network's clock stamped the signature.
	if err := httpnet.Verify(c.Request, body, a.cfg.NetworkSecret, time.Now(), 0); err != nil {
		httpx.Fail(c, apperr.Wrap(err, apperr.KindUnauthenticated, httpnet.CodeInvalidSignature,
			"The event's signature is missing, stale or wrong."))
		return
	}
	c.Request.Body = io.NopCloser(bytes.NewReader(body))
	var ev httpnet.Event
	if !httpx.Bind(c, &ev) {
		return
	}
	d, err := httpnet.Decode(ev)
	if err != nil {
		httpx.Fail(c, err)
		return
	}
	ctx := c.Request.Context()
	var outcome messages.ReceiptOutcome
	now := a.clock.Now()
	if d.AccountVerified != nil {
		var n int
		if n, err = a.Senders.ActivateOwner(ctx, d.AccountVerified.Phone); err == nil {
			outcome = messages.ReceiptUnchanged
			if n > 0 {
				outcome = messages.ReceiptApplied
			}
		}
	} else if r, ok := d.Receipt(now); ok {
		outcome, err = a.Messages.ApplyReceipt(ctx, r)
	} else if m, ok := d.Inbound(now); ok {
		outcome, err = a.Messages.Receive(ctx, m)
	} else if v, ok := d.Verdict(now); ok {
		var changed bool
		if changed, err = a.Templates.ApplyVerdict(ctx, v); err == nil {
			outcome = messages.ReceiptUnchanged
			if changed {
				outcome = messages.ReceiptApplied
			}
		}
	}
	if err != nil {
		httpx.Fail(c, err)
		return
	}
	a.log.InfoContext(ctx, "network event", "event_id", d.ID, "type", d.Type, "status", outcome)
	httpx.JSON(c, http.StatusOK, gin.H{"id": d.ID, "type": d.Type, "status": outcome})
}

// networkSink applies what the network reports (network.Sink) to the
// messages and template services: receipts move messages on, inbound
// messages land in their organization, template verdicts set templates'
// statuses. A report the service refuses as malformed (422) is
// logged and dropped, not offered again: it will not get better.
type networkSink struct {
	msgs      *messages.Service
	templates *templates.Service
	log       *slog.Logger
}

// TemplateReviewed applies v.
func (s networkSink) TemplateReviewed(ctx context.Context, v network.TemplateVerdict) error {
	_, err := s.templates.ApplyVerdict(ctx, v)
	return s.settle(ctx, err, "template verdict", v.Reference)
}

// Receipt applies r.
func (s networkSink) Receipt(ctx context.Context, r network.Receipt) error {
	_, err := s.msgs.ApplyReceipt(ctx, r)
	return s.settle(ctx, err, "receipt", r.Reference)
}

// Inbound stores m.
func (s networkSink) Inbound(ctx context.Context, m network.Inbound) error {
	_, err := s.msgs.Receive(ctx, m)
	return s.settle(ctx, err, "inbound message", m.ID)
}

// settle drops a malformed report's error, logging it.
func (s networkSink) settle(ctx context.Context, err error, what, id string) error {
	if e, ok := apperr.As(err); ok && e.Kind == apperr.KindInvalid {
		s.log.WarnContext(ctx, "network report dropped", "what", what, "id", id, "error", err)
		return nil
	}
	return err
}

// drainBuiltinNetwork applies the built-in network's reports (reads and
// messages written to sender numbers, kept in its outbox) every interval
// until ctx is done. Only a process that runs workers drains, and only with
// NETWORK=builtin; several such processes share the outbox safely (each
// report is taken by one). A failed pass is logged and retried at the next
// tick: the report stays in the outbox.
func (a *App) drainBuiltinNetwork(ctx context.Context, interval time.Duration) {
	n, err := builtin.New(builtin.Config{DB: a.DB, Clock: a.clock})
	if err != nil {
		a.log.ErrorContext(ctx, "network reports are not drained", "error", err)
		return
	}
	sink := networkSink{msgs: a.Messages, templates: a.Templates, log: a.log}
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		for {
			done, err := n.Drain(ctx, sink, 0)
			if err != nil {
				if ctx.Err() == nil {
					a.log.WarnContext(ctx, "network reports not applied", "error", err)
				}
				break
			}
			if done < builtin.DefaultDrainLimit {
				break
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}
