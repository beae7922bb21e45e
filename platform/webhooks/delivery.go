package webhooks

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/uptrace/bun"

	"github.com/bizmsg/platform/platform/apperr"
	"github.com/bizmsg/platform/platform/clock"
	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/page"
	"github.com/bizmsg/platform/platform/queue"
	"github.com/bizmsg/platform/platform/sqlq"
)

// Delivery states.
const (
	// StatePending: attempts go on (or the first is due).
	StatePending = "pending"
	// StateSucceeded: an attempt got a 2xx answer.
	StateSucceeded = "succeeded"
	// StateFailed: no more attempts (retried for Config.RetryFor, or the
	// endpoint was disabled).
	StateFailed = "failed"
)

// Delivery is one event's delivery to one endpoint, as its log shows it.
//
// It is the bun model of the log's columns of an organization's
// webhook_deliveries table, named per tenant with ModelTableExpr.
type Delivery struct {
	bun.BaseModel `bun:"table:webhook_deliveries,alias:d"`

	ID int64 `bun:"id,pk,autoincrement"`
	// EventID is the event's public id, the webhook-id header.
	EventID   string `bun:"event_id"`
	EventType string `bun:"event_type"`
	State     string `bun:"state"`
	// Attempts counts the requests made.
	Attempts int `bun:"attempts"`
	// LastStatusCode is the last answer's HTTP status, nil when no answer
	// came (or no attempt was made).
	LastStatusCode *int `bun:"last_status_code"`
	// LastError says why the last attempt failed ("" when it did not).
	LastError string `bun:"last_error,nullzero"`
	// LatencyMS is how long the last attempt took, in milliseconds.
	LatencyMS *int `bun:"latency_ms"`
	// NextAttemptAt is when the next attempt is due, nil unless pending.
	NextAttemptAt *time.Time `bun:"next_attempt_at"`
	CreatedAt     time.Time  `bun:"created_at"`
}

// deliveryJSON is the resource of docs/api.md, §Webhooks: Delivery log.
type deliveryJSON struct {
	ID             int64   `json:"id"`
	EventID        string  `json:"event_id"`
	EventType      string  `json:"event_type"`
	State          string  `json:"state"`
	Attempts       int     `json:"attempts"`
	LastStatusCode *int    `json:"last_status_code"`
	LastError      *string `json:"last_error"`
	LatencyMS      *int    `json:"latency_ms"`
	NextAttemptAt  *string `json:"next_attempt_at"`
	CreatedAt      string  `json:"created_at"`
}

// MarshalJSON renders the API resource, unset values null.
func (d Delivery) MarshalJSON() ([]byte, error) {
	out := deliveryJSON{
		ID:             d.ID,
		EventID:        d.EventID,
		EventType:      d.EventType,
		State:          d.State,
		Attempts:       d.Attempts,
		LastStatusCode: d.LastStatusCode,
		LastError:      nullable(d.LastError),
		LatencyMS:      d.LatencyMS,
		NextAttemptAt:  clock.FormatPtr(d.NextAttemptAt),
		CreatedAt:      clock.Format(d.CreatedAt),
	}
	return json.Marshal(out)
}

// nullable is a resource's optional text: null (nil) when "".
func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// scanDelivery scans a row of queries/redeliver.sql, the columns of
// Delivery in its order.
func scanDelivery(r db.Rows, d *Delivery) error {
	return r.Scan(&d.ID, &d.EventID, &d.EventType, &d.State, &d.Attempts, &d.LastStatusCode,
		&d.LastError, &d.LatencyMS, &d.NextAttemptAt, &d.CreatedAt)
}

// DeliveryQuery is a delivery log request as it arrives: raw query
// parameters, "" when not given.
type DeliveryQuery struct {
	State     string
	EventType string
	Limit     string
	Cursor    string
}

// DeliveryQueryFrom reads a delivery log request's query parameters
// (state, event_type, limit, cursor).
func DeliveryQueryFrom(v url.Values) DeliveryQuery {
	return DeliveryQuery{State: v.Get("state"), EventType: v.Get("event_type"), Limit: v.Get("limit"), Cursor: v.Get("cursor")}
}

// Deliveries returns one page of the endpoint's delivery log, newest first,
// filtered by state and event type (every problem with the parameters is
// one 422).
func (s *Service) Deliveries(ctx context.Context, t db.Tenant, endpointID int64, q DeliveryQuery) (page.Of[Delivery], error) {
	var v apperr.Validation
	p := page.ParseInto(&v, q.Limit, q.Cursor)
	if q.State != "" && q.State != StatePending && q.State != StateSucceeded && q.State != StateFailed {
		v.Add("state", "must be one of pending, succeeded, failed")
	}
	if q.EventType != "" && !slices.Contains(EventTypes(), q.EventType) {
		v.Add("event_type", "must be one of "+strings.Join(EventTypes(), ", "))
	}
	if err := v.Err(); err != nil {
		return page.Of[Delivery]{}, err
	}
	if _, err := s.Get(ctx, t, endpointID); err != nil {
		return page.Of[Delivery]{}, err
	}
	var list []Delivery
	sel := p.Select(s.db.Bun.NewSelect().Model(&list).ModelTableExpr(t.TableAs("webhook_deliveries", "d")).
		Where("d.endpoint_id = ?", endpointID), "d.id")
	if q.State != "" {
		sel.Where("d.state = ?", q.State)
	}
	if q.EventType != "" {
		sel.Where("d.event_type = ?", q.EventType)
	}
	err := sel.Scan(ctx)
	if err != nil {
		return page.Of[Delivery]{}, fmt.Errorf("list webhook deliveries: %w", err)
	}
	items, next := page.Cut(p, list, func(d Delivery) int64 { return d.ID })
	return page.Of[Delivery]{Items: items, NextCursor: next}, nil
}

// Redeliver sends delivery deliveryID's event to the endpoint again: a new
// pending delivery (same event, so the same webhook-id and body), with its
// job, returned. The endpoint must be enabled (422
// webhook_endpoint_disabled).
func (s *Service) Redeliver(ctx context.Context, t db.Tenant, endpointID, deliveryID int64) (Delivery, error) {
	if deliveryID <= 0 {
		return Delivery{}, apperr.NotFound("webhook delivery")
	}
	var out Delivery
	err := s.sql.Tx(ctx, func(tx pgx.Tx) error {
		if err := s.checkEnabled(ctx, tx, t, endpointID); err != nil {
			return err
		}
		now := s.clock.Now()
		// The event read, then the delivery inserted by VALUES: statements
		// Citus routes to the tenant's node, where an INSERT ... SELECT is
		// copied through the coordinator and committed in two phases
		// (docs/scaling.md, §Two-phase commits).
		var endpoint int64
		var id, typ, body, key string
		found, err := s.queryRow(ctx, tx, t, "redelivered", sqlq.Args{"id": deliveryID, "endpoint_id": endpointID},
			&endpoint, &id, &typ, &body, &key)
		if err == nil && found {
			found, err = s.queryFirst(ctx, tx, t, "redeliver", sqlq.Args{
				"endpoint_id": endpoint, "event_id": id, "event_type": typ, "body": body, "key": key, "now": now,
			}, func(r db.Rows) error { return scanDelivery(r, &out) })
		}
		switch {
		case err != nil:
			return fmt.Errorf("redeliver webhook delivery %d: %w", deliveryID, err)
		case !found:
			return apperr.NotFound("webhook delivery")
		}
		return s.queueJobs(ctx, tx, t, endpointID, []int64{out.ID}, now)
	})
	if err != nil {
		return Delivery{}, err
	}
	return out, nil
}

// RedeliverFailed redelivers, like Redeliver, every event whose latest
// delivery to the endpoint failed and was created at or after since (an
// event already redelivered, and not failed again, is not sent once more),
// in the order of the failed deliveries, and returns how many.
func (s *Service) RedeliverFailed(ctx context.Context, t db.Tenant, endpointID int64, since time.Time) (int, error) {
	n := 0
	err := s.sql.Tx(ctx, func(tx pgx.Tx) error {
		if err := s.checkEnabled(ctx, tx, t, endpointID); err != nil {
			return err
		}
		now := s.clock.Now()
		// The latest delivery of each event to the endpoint created since
		// then (a later one of the same event was created later still),
		// read, then inserted by VALUES (as Redeliver).
		var rows []sqlq.Args
		err := s.query(ctx, tx, t, "failed_since", sqlq.Args{"endpoint_id": endpointID, "since": since}, func(r db.Rows) error {
			for r.Next() {
				var endpoint int64
				var id, typ, body, key string
				if err := r.Scan(&endpoint, &id, &typ, &body, &key); err != nil {
					return err
				}
				rows = append(rows, deliveryRow(endpoint, id, typ, body, key, now, now))
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("redeliver failed webhook deliveries: %w", err)
		}
		var made []delivered
		for len(rows) > 0 {
			chunk := rows[:min(len(rows), routedBatch)]
			rows = rows[len(chunk):]
			if made, err = s.insertDeliveries(ctx, tx, t, chunk, made); err != nil {
				return fmt.Errorf("redeliver failed webhook deliveries: %w", err)
			}
		}
		slices.SortFunc(made, func(a, b delivered) int { return cmp.Compare(a.id, b.id) })
		ids := make([]int64, len(made))
		for i, d := range made {
			ids[i] = d.id
		}
		n = len(ids)
		return s.queueJobs(ctx, tx, t, endpointID, ids, now)
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}

// checkEnabled locks the endpoint against deletion for the transaction and
// refuses a disabled one.
func (s *Service) checkEnabled(ctx context.Context, tx pgx.Tx, t db.Tenant, endpointID int64) error {
	if endpointID <= 0 {
		return errEndpointNotFound()
	}
	var enabled bool
	found, err := s.queryRow(ctx, tx, t, "check_enabled", sqlq.Args{"id": endpointID}, &enabled)
	switch {
	case err != nil:
		return fmt.Errorf("read webhook endpoint %d: %w", endpointID, err)
	case !found:
		return errEndpointNotFound()
	case !enabled:
		return apperr.Invalid(CodeEndpointDisabled,
			"The webhook endpoint is disabled. Enable it (PATCH enabled=true) before redelivering.")
	}
	return nil
}

// queueJobs inserts the jobs of the endpoint's deliveries ids, created at
// created, in tx.
func (s *Service) queueJobs(ctx context.Context, tx pgx.Tx, t db.Tenant, endpointID int64, ids []int64, created time.Time) error {
	if len(ids) == 0 {
		return nil
	}
	jobs := make([]river.InsertManyParams, len(ids))
	for i, id := range ids {
		jobs[i] = queue.WebhookDeliveryJob(queue.WebhookDeliveryArgs{
			TenantRef: queue.RefOf(t), DeliveryID: id, EndpointID: endpointID,
			RetryUntil: created.Add(s.cfg.RetryFor),
		})
	}
	if _, err := s.jobs.InsertManyFastTx(ctx, tx, jobs); err != nil {
		return fmt.Errorf("queue webhook deliveries: %w", err)
	}
	return nil
}
