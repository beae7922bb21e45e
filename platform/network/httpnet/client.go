package httpnet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/bizmsg/platform/platform/defaults"
	"github.com/bizmsg/platform/platform/network"
)

// Config configures a Client.
type Config struct {
	// BaseURL is the network's base URL (http or https), e.g.
	// "https://network.example/api"; the protocol's paths are appended to it.
	// Required.
	BaseURL string
	// Secret is the shared secret that signs requests. Required.
	Secret string
	// Timeout bounds one attempt (connecting, sending, reading the whole
	// answer). Default 5s.
	Timeout time.Duration
	// Retries is how many times a transient failure (connection error,
	// timeout, 5xx, 408, 429) is retried after the first attempt. Default 3;
	// negative: never retry.
	Retries int
	// BackoffBase and BackoffMax shape the wait before retry n (n from 1):
	// BackoffBase·2^(n-1), capped at BackoffMax, with half of it randomised
	// (jitter). Defaults 200ms and 5s.
	BackoffBase time.Duration
	BackoffMax  time.Duration
	// MaxRetryAfter is the longest Retry-After (on 429 or 503) the client waits
	// out; a longer one ends the call with the transient error, leaving the
	// retry to the caller (the delivery job's own backoff). Default 30s.
	MaxRetryAfter time.Duration
	// HTTPClient sends the requests. Default: a client with its own
	// transport, no overall timeout (Timeout applies per attempt).
	HTTPClient *http.Client
	// UserAgent is sent with every request. Default "bizmsg-platform/1 httpnet".
	UserAgent string
	// Now is the wall clock that stamps signatures; it must agree with the
	// network's clock within its tolerance. Default time.Now.
	Now func() time.Time
}

func (c *Config) validate() error {
	if c.Secret == "" {
		return errors.New("httpnet: Config.Secret is required")
	}
	u, err := url.Parse(c.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return fmt.Errorf("httpnet: Config.BaseURL %q must be an http(s) URL without query", c.BaseURL)
	}
	c.BaseURL = strings.TrimRight(c.BaseURL, "/")
	defaults.Positive(&c.Timeout, 5*time.Second)
	if c.Retries == 0 {
		c.Retries = 3
	} else if c.Retries < 0 {
		c.Retries = 0
	}
	defaults.Positive(&c.BackoffBase, 200*time.Millisecond)
	defaults.Positive(&c.BackoffMax, 5*time.Second)
	defaults.Positive(&c.MaxRetryAfter, 30*time.Second)
	if c.HTTPClient == nil {
		c.HTTPClient = &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
	}
	if c.UserAgent == "" {
		c.UserAgent = "bizmsg-platform/1 httpnet"
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return nil
}

// Client is the messaging network over HTTP. It is safe for concurrent use.
//
// Errors follow network.Network: a lookup of a phone no account holds wraps
// network.ErrNotFound; a refusal (400 or 422, or 404 other than an unknown
// endpoint, with a JSON error code) is a *network.PermanentError with the
// network's code; everything else is transient: connection failures and
// timeouts, 5xx, 408 and 429 (retried here first), and answers that show a
// misconfiguration rather than a verdict on the request (401, 403, an unknown
// endpoint, a 4xx without the protocol's error body), returned as
// *StatusError without retrying.
type Client struct {
	cfg Config
}

var _ network.Network = (*Client)(nil)

// New validates cfg and returns a Client.
func New(cfg Config) (*Client, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &Client{cfg: cfg}, nil
}

// StatusError is an answer of the network that is neither a success nor a
// refusal of the request: the request may succeed later (after a retry, or
// once the configuration is fixed).
type StatusError struct {
	// Status is the HTTP status; Code and Message the error body's, if any.
	Status  int
	Code    string
	Message string
}

func (e *StatusError) Error() string {
	s := fmt.Sprintf("httpnet: network answered %d", e.Status)
	if e.Code != "" {
		s += " " + e.Code
	}
	if e.Message != "" {
		s += ": " + e.Message
	}
	return s
}

// Lookup returns the account holding phone (GET /v1/accounts), or an error
// wrapping network.ErrNotFound.
func (c *Client) Lookup(ctx context.Context, phone, senderPhone string) (network.Account, error) {
	q := url.Values{"phone": {phone}}
	if senderPhone != "" {
		q.Set("sender_phone", senderPhone)
	}
	var a accountJSON
	if err := c.call(ctx, http.MethodGet, PathAccounts+"?"+q.Encode(), nil, &a, true); err != nil {
		return network.Account{}, fmt.Errorf("lookup %s: %w", phone, err)
	}
	return a.account(), nil
}

// Verified reports whether the account holding phone is verified (the
// account's "verified" in GET /v1/accounts), or an error wrapping
// network.ErrNotFound.
func (c *Client) Verified(ctx context.Context, phone string) (bool, error) {
	var a accountJSON
	path := PathAccounts + "?" + url.Values{"phone": {phone}}.Encode()
	if err := c.call(ctx, http.MethodGet, path, nil, &a, true); err != nil {
		return false, fmt.Errorf("verified %s: %w", phone, err)
	}
	return a.Verified, nil
}

// Deliver posts msg (POST /v1/messages). Retrying is safe: the network
// delivers at most once per msg.Reference and answers a repeat with the first
// delivery.
func (c *Client) Deliver(ctx context.Context, msg network.Message) (network.Delivery, error) {
	body, err := json.Marshal(messageToJSON(msg))
	if err != nil {
		return network.Delivery{}, fmt.Errorf("httpnet: encode message: %w", err)
	}
	var d deliveryJSON
	if err := c.call(ctx, http.MethodPost, PathMessages, body, &d, false); err != nil {
		if network.IsPermanent(err) {
			return network.Delivery{}, err
		}
		return network.Delivery{}, fmt.Errorf("deliver %s: %w", msg.Reference, err)
	}
	return network.Delivery{
		MessageID:      d.MessageID,
		ConversationID: d.ConversationID,
		RecipientID:    d.RecipientID,
		DeliveredAt:    d.DeliveredAt.UTC(),
	}, nil
}

// call performs one protocol call, retrying transient failures, and decodes
// a 2xx answer into out. lookup says a 404 not_registered means "no account"
// (network.ErrNotFound) rather than a refusal.
func (c *Client) call(ctx context.Context, method, target string, body []byte, out any, lookup bool) error {
	attempts := c.cfg.Retries + 1
	var last error
	for n := 1; ; n++ {
		res, err := c.attempt(ctx, method, target, body)
		if ctxErr := ctx.Err(); err != nil && ctxErr != nil {
			return fmt.Errorf("httpnet: %s %s: %w", method, target, ctxErr)
		}
		var wait time.Duration
		switch {
		case err != nil:
			last = fmt.Errorf("httpnet: %s %s: %w", method, target, err)
		case res.status >= 200 && res.status < 300:
			if err := json.Unmarshal(res.body, out); err != nil {
				return fmt.Errorf("httpnet: %s %s: decode %d answer: %w", method, target, res.status, err)
			}
			return nil
		case retryable(res.status):
			last = res.statusError()
			if ra, ok := retryAfter(res.header.Get("Retry-After"), c.cfg.Now()); ok {
				if ra > c.cfg.MaxRetryAfter {
					return fmt.Errorf("httpnet: %s %s: Retry-After %s is over %s: %w", method, target, ra, c.cfg.MaxRetryAfter, last)
				}
				wait = ra
			}
		default:
			return res.verdict(lookup)
		}
		if n >= attempts {
			return fmt.Errorf("after %d attempt(s): %w", n, last)
		}
		if wait == 0 {
			wait = c.backoff(n)
		}
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return fmt.Errorf("httpnet: %s %s: %w (last failure: %w)", method, target, ctx.Err(), last)
		case <-timer.C:
		}
	}
}

// result is one answer of the network.
type result struct {
	status int
	header http.Header
	body   []byte
}

// attempt sends one signed request, bounded by the per-attempt timeout, and
// reads at most MaxBodyBytes of the answer.
func (c *Client) attempt(ctx context.Context, method, target string, body []byte) (*result, error) {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	req, err := NewSignedRequest(ctx, method, c.cfg.BaseURL+target, c.cfg.Secret, body, c.cfg.Now())
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", c.cfg.UserAgent)
	resp, err := c.cfg.HTTPClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, MaxBodyBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read %d answer: %w", resp.StatusCode, err)
	}
	if len(b) > MaxBodyBytes {
		return nil, fmt.Errorf("%d answer exceeds %d bytes", resp.StatusCode, MaxBodyBytes)
	}
	return &result{status: resp.StatusCode, header: resp.Header, body: b}, nil
}

// errorBody is the answer's protocol error body; zero when it has none.
func (r *result) errorBody() errorJSON {
	var e errorJSON
	_ = json.Unmarshal(r.body, &e)
	return e
}

func (r *result) statusError() *StatusError {
	e := r.errorBody()
	return &StatusError{Status: r.status, Code: e.Code, Message: e.Message}
}

// verdict maps a non-retryable, non-2xx answer to the network.Network errors.
func (r *result) verdict(lookup bool) error {
	e := r.errorBody()
	switch {
	case e.Code == "":
		return r.statusError()
	case lookup && r.status == http.StatusNotFound && e.Code == network.CodeNotRegistered:
		return fmt.Errorf("%w: %s", network.ErrNotFound, e.Message)
	case r.status == http.StatusBadRequest, r.status == http.StatusUnprocessableEntity,
		r.status == http.StatusNotFound && e.Code != CodeNotFound:
		return &network.PermanentError{Code: e.Code, Message: e.Message}
	default:
		return r.statusError()
	}
}

// retryable: statuses worth another attempt of the same request.
func retryable(status int) bool {
	return status >= 500 || status == http.StatusTooManyRequests || status == http.StatusRequestTimeout
}

// backoff is the wait before retry n (n ≥ 1): exponential, capped, with the
// upper half randomised so that many clients do not retry in step.
func (c *Client) backoff(n int) time.Duration {
	d := c.cfg.BackoffBase << min(n-1, 30)
	if d <= 0 || d > c.cfg.BackoffMax {
		d = c.cfg.BackoffMax
	}
	half := d / 2
	return half + rand.N(half+1) //nolint:gosec // G404: retry jitter, not a secret
}

// retryAfter parses a Retry-After header: delay seconds or an HTTP date.
func retryAfter(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if secs, err := strconv.Atoi(v); err == nil {
		if secs < 0 {
			return 0, false
		}
		return time.Duration(secs) * time.Second, true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0), true
	}
	return 0, false
}
