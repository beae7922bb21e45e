package app

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/bizmsg/platform/platform/apperr"
	"github.com/bizmsg/platform/platform/httpx"
	"github.com/bizmsg/platform/platform/messages"
	"github.com/bizmsg/platform/platform/network/httpnet"
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
	if err := httpx.BindJSON(c, &ev); err != nil {
		httpx.Fail(c, err)
		return
	}
	d, err := httpnet.Decode(ev)
	if err != nil {
		httpx.Fail(c, err)
		return
	}
	ctx := c.Request.Context()
	var outcome messages.ReceiptOutcome
	switch {
	case d.AccountVerified != nil:
		var n int
		if n, err = a.Senders.ActivateOwner(ctx, d.AccountVerified.Phone); err == nil {
			outcome = messages.ReceiptUnchanged
			if n > 0 {
				outcome = messages.ReceiptApplied
			}
		}
	case d.MessageDelivered != nil:
		outcome, err = a.Messages.ApplyReceipt(ctx, messages.Receipt{
			Reference: d.MessageDelivered.Reference,
			Status:    messages.StatusDelivered,
			At:        d.At(d.MessageDelivered.DeliveredAt, a.clock.Now()),
		})
	case d.MessageFailed != nil:
		outcome, err = a.Messages.ApplyReceipt(ctx, messages.Receipt{
			Reference:    d.MessageFailed.Reference,
			Status:       messages.StatusFailed,
			At:           d.At(d.MessageFailed.FailedAt, a.clock.Now()),
			ErrorCode:    d.MessageFailed.ErrorCode,
			ErrorMessage: d.MessageFailed.ErrorMessage,
		})
	}
	if err != nil {
		httpx.Fail(c, err)
		return
	}
	a.log.InfoContext(ctx, "network event", "event_id", d.ID, "type", d.Type, "status", outcome)
	httpx.JSON(c, http.StatusOK, gin.H{"id": d.ID, "type": d.Type, "status": outcome})
}
