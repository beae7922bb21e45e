package webhooks

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"syscall"
	"time"
)

// maxErrorLength bounds a recorded last_error.
const maxErrorLength = 200

// maxBodyRead is how much of an answer's body is read (and discarded), so
// the connection can be reused.
const maxBodyRead = 64 << 10

// attemptResult is one request's outcome.
type attemptResult struct {
	status  int // 0 when no answer came
	latency time.Duration
	// failure is "" for a 2xx answer, else why the attempt failed, short
	// and without secrets or the URL.
	failure string
}

// post makes the request of one attempt.
func (s *Service) post(ctx context.Context, d attemptRow, now time.Time) attemptResult {
	ts := now.Unix()
	sig, err := signature(d.secrets, d.eventID, ts, d.body)
	if err != nil {
		return attemptResult{failure: "the endpoint's signing secret is unreadable"}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, d.url, bytes.NewReader(d.body))
	if err != nil {
		return attemptResult{failure: "the endpoint's URL is unusable"}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", UserAgent)
	// Written as the specification spells them (Set would canonicalise).
	req.Header[HeaderID] = []string{d.eventID}
	req.Header[HeaderTimestamp] = []string{strconv.FormatInt(ts, 10)}
	req.Header[HeaderSignature] = []string{sig}
	start := time.Now()
	resp, err := s.client.Do(req)
	if err != nil {
		return attemptResult{latency: time.Since(start), failure: s.describe(err)}
	}
	_, readErr := io.Copy(io.Discard, io.LimitReader(resp.Body, maxBodyRead))
	_ = resp.Body.Close()
	res := attemptResult{status: resp.StatusCode, latency: time.Since(start)}
	switch {
	case resp.StatusCode >= 300 && resp.StatusCode < 400:
		res.failure = fmt.Sprintf("redirects are not followed (the endpoint answered %d)", resp.StatusCode)
	case resp.StatusCode < 200 || resp.StatusCode >= 300:
		res.failure = fmt.Sprintf("the endpoint answered %d", resp.StatusCode)
	case readErr != nil && isTimeout(readErr):
		res.failure = "no complete answer within " + s.cfg.Timeout.String()
	}
	return res
}

// describe words a request's failure for last_error: short, and without the
// URL (which may carry a token) or anything of the platform's.
func (s *Service) describe(err error) string {
	var (
		blocked *blockedAddrError
		dnsErr  *net.DNSError
		certErr *tls.CertificateVerificationError
		unknown x509.UnknownAuthorityError
		host    x509.HostnameError
		recErr  tls.RecordHeaderError
	)
	switch {
	case errors.As(err, &blocked):
		return blocked.Error()
	case isTimeout(err):
		return "no answer within " + s.cfg.Timeout.String()
	case errors.As(err, &dnsErr):
		if dnsErr.IsNotFound {
			return "the endpoint's host name does not exist"
		}
		return "the endpoint's host name could not be resolved"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "the connection was closed before an answer"
	case errors.As(err, &certErr), errors.As(err, &unknown), errors.As(err, &host):
		return "the endpoint's TLS certificate is not valid for its host"
	case errors.As(err, &recErr):
		return "the endpoint does not speak TLS (try http://)"
	}
	var urlErr *url.Error
	if errors.As(err, &urlErr) {
		err = urlErr.Err
	}
	msg := "request failed: " + err.Error()
	if len(msg) > maxErrorLength {
		msg = msg[:maxErrorLength]
	}
	return msg
}

// isTimeout reports a request that ran out of time.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded) ||
		(errors.As(err, &ne) && ne.Timeout())
}
