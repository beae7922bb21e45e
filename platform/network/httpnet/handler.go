package httpnet

import (
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/bizmsg/platform/platform/defaults"
	"github.com/bizmsg/platform/platform/network"
	"github.com/bizmsg/platform/platform/phone"
)

// HandlerConfig configures a Handler.
type HandlerConfig struct {
	// Network answers the calls. Required.
	Network network.Network
	// Secret is the shared secret requests must be signed with. Required.
	Secret string
	// Tolerance is how far a request's timestamp may be from Now. Default
	// DefaultTolerance (5 minutes).
	Tolerance time.Duration
	// Now is the wall clock signatures are checked against. Default time.Now.
	Now func() time.Time
	// Logger receives the network's failures (answered 503). Default
	// slog.Default().
	Logger *slog.Logger
}

// Handler serves the protocol (docs/network-http.md) over a network.Network:
// GET /v1/accounts and POST /v1/messages, relative to where it is mounted.
// Every request must be signed; others are answered 401 invalid_signature
// before anything else is looked at.
type Handler struct {
	cfg HandlerConfig
}

// NewHandler validates cfg and returns a Handler.
func NewHandler(cfg HandlerConfig) (*Handler, error) {
	switch {
	case cfg.Network == nil:
		return nil, errors.New("httpnet: HandlerConfig.Network is required")
	case cfg.Secret == "":
		return nil, errors.New("httpnet: HandlerConfig.Secret is required")
	}
	defaults.Positive(&cfg.Tolerance, DefaultTolerance)
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	defaults.Logger(&cfg.Logger)
	return &Handler{cfg: cfg}, nil
}

// ServeHTTP verifies the request's signature and routes it.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			writeError(w, http.StatusRequestEntityTooLarge, CodePayloadTooLarge, "the body exceeds 1 MiB")
			return
		}
		writeError(w, http.StatusBadRequest, CodeMalformedRequest, "the body could not be read")
		return
	}
	if err := Verify(r, body, h.cfg.Secret, h.cfg.Now(), h.cfg.Tolerance); err != nil {
		h.cfg.Logger.InfoContext(r.Context(), "network request refused", "path", r.URL.Path, "error", err)
		writeError(w, http.StatusUnauthorized, CodeInvalidSignature, "the request signature is missing, stale or wrong")
		return
	}
	var allowed string
	switch r.URL.Path {
	case PathAccounts:
		if allowed = http.MethodGet; r.Method == allowed {
			h.lookup(w, r)
			return
		}
	case PathMessages:
		if allowed = http.MethodPost; r.Method == allowed {
			h.deliver(w, r, body)
			return
		}
	case PathTemplates:
		if allowed = http.MethodPost; r.Method == allowed {
			h.submitTemplate(w, r, body)
			return
		}
	default:
		writeError(w, http.StatusNotFound, CodeNotFound, "no such endpoint")
		return
	}
	w.Header().Set("Allow", allowed)
	writeError(w, http.StatusMethodNotAllowed, CodeMethodNotAllowed, r.Method+" is not allowed here")
}

// lookup answers GET /v1/accounts?phone=P[&sender_phone=S].
func (h *Handler) lookup(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	p := q.Get("phone")
	if p == "" {
		writeError(w, http.StatusBadRequest, CodeMalformedRequest, "the phone query parameter is required")
		return
	}
	a, err := h.cfg.Network.Lookup(r.Context(), p, q.Get("sender_phone"))
	switch {
	case errors.Is(err, network.ErrNotFound):
		writeError(w, http.StatusNotFound, network.CodeNotRegistered, "no account holds this phone")
	case errors.Is(err, phone.ErrInvalid):
		writeError(w, http.StatusUnprocessableEntity, network.CodeInvalidPhone, err.Error())
	case err != nil:
		h.unavailable(w, r, err)
	default:
		writeJSON(w, http.StatusOK, accountToJSON(a))
	}
}

// deliver answers POST /v1/messages.
func (h *Handler) deliver(w http.ResponseWriter, r *http.Request, body []byte) {
	var m messageJSON
	if err := json.Unmarshal(body, &m); err != nil {
		writeError(w, http.StatusBadRequest, CodeMalformedRequest, "the body must be a JSON message")
		return
	}
	d, err := h.cfg.Network.Deliver(r.Context(), m.message())
	h.answer(w, r, err, http.StatusOK, func() any {
		return deliveryJSON{
			MessageID:      d.MessageID,
			ConversationID: d.ConversationID,
			RecipientID:    d.RecipientID,
			DeliveredAt:    d.DeliveredAt.UTC(),
		}
	})
}

// answer writes the answer to a network call that may refuse: 422 with the
// refusal's code when err is a *network.PermanentError, 503 for another
// error (unavailable), else status with body().
func (h *Handler) answer(w http.ResponseWriter, r *http.Request, err error, status int, body func() any) {
	var refusal *network.PermanentError
	switch {
	case errors.As(err, &refusal):
		writeError(w, http.StatusUnprocessableEntity, refusal.Code, refusal.Message)
	case err != nil:
		h.unavailable(w, r, err)
	default:
		writeJSON(w, status, body())
	}
}

// unavailable logs a network failure and answers 503 without its details.
func (h *Handler) unavailable(w http.ResponseWriter, r *http.Request, err error) {
	h.cfg.Logger.ErrorContext(r.Context(), "network call failed", "path", r.URL.Path, "error", err)
	writeError(w, http.StatusServiceUnavailable, CodeUnavailable, "the network is unavailable; retry later")
}

func writeError(w http.ResponseWriter, status int, code, message string) {
	writeJSON(w, status, errorJSON{Code: code, Message: message})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		b = []byte(`{"code":"internal_error","message":"the answer could not be encoded"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}
