package httpnet

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/bizmsg/platform/platform/defaults"
)

// The signature headers of every request of the protocol, in both directions
// (docs/network-http.md "Signing").
const (
	// HeaderTimestamp carries the Unix time (seconds) the request was signed at.
	HeaderTimestamp = "X-Network-Timestamp"
	// HeaderSignature carries "v1=<hex HMAC-SHA256>"; several comma-separated
	// v1 entries are accepted (a sender rotating its secret signs twice).
	HeaderSignature = "X-Network-Signature"
	// DefaultTolerance is how far a request's timestamp may be from the
	// receiver's clock, either way.
	DefaultTolerance = 5 * time.Minute
)

// signatureVersion prefixes a signature in HeaderSignature.
const signatureVersion = "v1="

// ErrSignature is wrapped by every error Verify returns.
var ErrSignature = errors.New("httpnet: invalid request signature")

// Signature returns the hex HMAC-SHA256, keyed with secret, of
// "<unix timestamp>.<METHOD>.<request target>.<hex sha256 of body>", where the
// request target is the path and query exactly as on the request line
// ("/v1/accounts?phone=%2B14155552671").
func Signature(secret string, ts int64, method, target string, body []byte) string {
	sum := sha256.Sum256(body)
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(strconv.FormatInt(ts, 10)))
	mac.Write([]byte{'.'})
	mac.Write([]byte(strings.ToUpper(method)))
	mac.Write([]byte{'.'})
	mac.Write([]byte(target))
	mac.Write([]byte{'.'})
	mac.Write([]byte(hex.EncodeToString(sum[:])))
	return hex.EncodeToString(mac.Sum(nil))
}

// Sign sets the timestamp and signature headers of req, whose body is body,
// signed at now.
func Sign(req *http.Request, secret string, body []byte, now time.Time) {
	ts := now.Unix()
	req.Header.Set(HeaderTimestamp, strconv.FormatInt(ts, 10))
	req.Header.Set(HeaderSignature, signatureVersion+Signature(secret, ts, req.Method, req.URL.RequestURI(), body))
}

// NewSignedRequest returns a request of method to url with body (JSON, may be
// nil), signed with secret at now. Networks use it to post events to the
// platform's callback endpoint; the Client uses it for every call.
func NewSignedRequest(ctx context.Context, method, url, secret string, body []byte, now time.Time) (*http.Request, error) {
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, r)
	if err != nil {
		return nil, fmt.Errorf("httpnet: new request: %w", err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	Sign(req, secret, body, now)
	return req, nil
}

// Verify checks the signature of a received request whose body is body: the
// timestamp must be within tolerance of now (DefaultTolerance when tolerance
// is 0) and one v1 signature must match, compared in constant time. The
// signed target is the request line's (r.RequestURI), so a handler mounted
// under a prefix (http.StripPrefix) still verifies what the sender signed.
// Every error wraps ErrSignature and says why, for logs.
func Verify(r *http.Request, body []byte, secret string, now time.Time, tolerance time.Duration) error {
	defaults.Positive(&tolerance, DefaultTolerance)
	rawTS := r.Header.Get(HeaderTimestamp)
	rawSig := r.Header.Get(HeaderSignature)
	if rawTS == "" || rawSig == "" {
		return fmt.Errorf("%w: %s and %s are required", ErrSignature, HeaderTimestamp, HeaderSignature)
	}
	ts, err := strconv.ParseInt(rawTS, 10, 64)
	if err != nil {
		return fmt.Errorf("%w: %s is not a Unix time", ErrSignature, HeaderTimestamp)
	}
	if skew := now.Sub(time.Unix(ts, 0)); skew > tolerance || skew < -tolerance {
		return fmt.Errorf("%w: timestamp is %s away from now (tolerance %s)", ErrSignature, skew.Round(time.Second), tolerance)
	}
	target := r.RequestURI
	if target == "" {
		target = r.URL.RequestURI()
	}
	want := []byte(Signature(secret, ts, r.Method, target, body))
	for _, part := range strings.Split(rawSig, ",") {
		part = strings.TrimSpace(part)
		got, ok := strings.CutPrefix(part, signatureVersion)
		if ok && hmac.Equal([]byte(got), want) {
			return nil
		}
	}
	return fmt.Errorf("%w: no v1 signature matches", ErrSignature)
}
