// Package lookup answers whether a phone can receive messages (GET
// /api/v1/contacts/lookup), and holds the one reachability rule the send path
// uses too: Check. A lookup that says "ok" and a send that is accepted apply
// the same rule to the same network answer.
package lookup

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/bizmsg/platform/platform/apperr"
	"github.com/bizmsg/platform/platform/clock"
	"github.com/bizmsg/platform/platform/consent"
	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/defaults"
	"github.com/bizmsg/platform/platform/network"
	"github.com/bizmsg/platform/platform/phone"
	"github.com/bizmsg/platform/platform/senders"
)

// The reason codes of a lookup (docs/api.md, §Lookup). They are the network's
// refusal codes, so a failed delivery and the lookup that predicted it agree.
const (
	ReasonOK                = network.CodeOK
	ReasonNotRegistered     = network.CodeNotRegistered
	ReasonPhoneUnverified   = network.CodePhoneUnverified
	ReasonReceivingDisabled = network.CodeReceivingDisabled
	ReasonBlockedSender     = network.CodeBlockedSender
	ReasonSelf              = network.CodeSelf
	// ReasonOptedOut: the phone is on the organization's opt-out list
	// (decided by the organization, not the network: Service.Lookup says
	// it, after not_registered).
	ReasonOptedOut = consent.ReasonOptedOut
)

// CodeNetworkUnavailable (503) means the messaging network did not answer.
const CodeNetworkUnavailable = "network_unavailable"

// Result is the lookup result (docs/api.md, §Lookup).
type Result struct {
	// Exists: an account holds the phone.
	Exists bool `json:"exists"`
	// CanReceive is true only with ReasonCode "ok".
	CanReceive bool   `json:"can_receive"`
	ReasonCode string `json:"reason_code"`
	// RecipientID is the network account id; nil when none exists.
	RecipientID *int64 `json:"recipient_id"`
	// IsVerified: the account owner is verified on the network.
	IsVerified      bool       `json:"is_verified"`
	PhoneVerifiedAt *time.Time `json:"phone_verified_at"`
	// SenderStatus is the status of the sender number the lookup named, nil
	// without one: only an active number may send (a send from any other
	// is refused, 422 sender_not_active, whatever reason_code says).
	SenderStatus *senders.Status `json:"sender_status"`
	// ServiceWindowExpiresAt is when the network's service window for a
	// free-form message from the named sender to this phone closes: nil
	// without a sender, without a window, or when it is closed.
	ServiceWindowExpiresAt *time.Time `json:"service_window_expires_at"`
}

// Explain returns a sentence explaining a reason code, for error messages;
// "" for a code it does not know.
func Explain(code string) string {
	switch code {
	case ReasonOK:
		return "The recipient can receive messages."
	case ReasonNotRegistered:
		return "No account on the messaging network holds this phone number."
	case ReasonPhoneUnverified:
		return "The recipient's phone number is not verified on the messaging network."
	case ReasonReceivingDisabled:
		return "The recipient does not accept messages."
	case ReasonBlockedSender:
		return "The recipient has blocked this sender number."
	case ReasonSelf:
		return "The recipient is the sender number itself."
	case ReasonOptedOut:
		return "The recipient has opted out of this organization's messages."
	default:
		return ""
	}
}

// Check is the reachability rule: can the account holding recipient (E.164)
// receive from senderPhone (E.164, or "" when no sender is known)? The reason
// is the first that applies of: not_registered, self, phone_unverified,
// receiving_disabled, blocked_sender; else ok. A network failure is returned
// as an error (503 network_unavailable); a failure of the platform's own
// (network.IsPlatform: the built-in network's database) is returned as it
// is, answered as any other (503 service_unavailable when the database is
// unavailable).
func Check(ctx context.Context, net network.Network, recipient, senderPhone string) (Result, error) {
	a, err := net.Lookup(ctx, recipient, senderPhone)
	if errors.Is(err, network.ErrNotFound) {
		return Result{ReasonCode: ReasonNotRegistered}, nil
	}
	if network.IsPlatform(err) {
		return Result{}, fmt.Errorf("network lookup: %w", err)
	}
	if err != nil {
		return Result{}, apperr.Wrap(fmt.Errorf("network lookup: %w", err), apperr.KindUnavailable,
			CodeNetworkUnavailable, "The messaging network is not available. Try again later.")
	}
	r := Result{
		Exists:          true,
		RecipientID:     &a.ID,
		IsVerified:      a.Verified,
		PhoneVerifiedAt: clock.StampPtr(a.PhoneVerifiedAt),
		ReasonCode:      a.ReasonCode(),
	}
	if senderPhone != "" && a.Phone == senderPhone {
		r.ReasonCode = ReasonSelf
	}
	r.CanReceive = r.ReasonCode == ReasonOK
	return r, nil
}

// Senders resolves the optional sender of a lookup; *senders.Service is one.
type Senders interface {
	Resolve(ctx context.Context, t db.Tenant, ref senders.SenderRef) (senders.Sender, error)
}

// Query is a lookup request as it arrives: raw query parameters.
type Query struct {
	Phone string
	// SenderNumberID and SenderPhone optionally name the organization's sender
	// number the message would come from; with one, blocked_sender and self
	// are checked too.
	SenderNumberID string
	SenderPhone    string
}

// Contacts is what the organization knows of a phone (consent.Service):
// whether it opted out and, for a sender, when it last wrote to it.
type Contacts interface {
	Contact(ctx context.Context, t db.Tenant, phone string, senderID int64) (consent.Contact, error)
}

// Config configures the Service.
type Config struct {
	// Network and Senders are required.
	Network network.Network
	Senders Senders
	// Contacts is required.
	Contacts Contacts
	// ServiceWindow is the network's service window (0: none).
	ServiceWindow time.Duration
	// Clock defaults to the real clock.
	Clock clock.Clock
}

// Service answers lookups for one organization at a time.
type Service struct {
	net      network.Network
	senders  Senders
	contacts Contacts
	window   time.Duration
	clock    clock.Clock
}

// New returns a Service.
func New(cfg Config) (*Service, error) {
	if cfg.Network == nil || cfg.Senders == nil || cfg.Contacts == nil {
		return nil, errors.New("lookup: a network, a senders service and a contacts service are required")
	}
	defaults.Clock(&cfg.Clock)
	return &Service{net: cfg.Network, senders: cfg.Senders, contacts: cfg.Contacts, window: cfg.ServiceWindow, clock: cfg.Clock}, nil
}

// Parsed is a validated lookup request.
type Parsed struct {
	// Recipient is the phone to look up, in E.164.
	Recipient string
	// Sender is the sender number named, if any (zero otherwise).
	Sender senders.SenderRef
}

// Parse validates q: a 422 with every field error at once (phone missing
// or malformed, sender_number_id not a positive integer, sender_phone
// malformed). Whether the sender is one of the organization's numbers is
// Lookup's to find out.
func (q Query) Parse() (Parsed, error) {
	var (
		v   apperr.Validation
		out Parsed
	)
	if strings.TrimSpace(q.Phone) == "" {
		v.Add("phone", "is required")
	} else if p, err := phone.Normalize(q.Phone); err != nil {
		v.Add("phone", err.Error())
	} else {
		out.Recipient = p
	}
	if q.SenderNumberID != "" {
		out.Sender.ID = v.PositiveInt("sender_number_id", q.SenderNumberID)
	}
	if q.SenderPhone != "" {
		if p, err := phone.Normalize(q.SenderPhone); err != nil {
			v.Add("sender_phone", err.Error())
		} else {
			out.Sender.Phone = p
		}
	}
	if err := v.Err(); err != nil {
		return Parsed{}, err
	}
	return out, nil
}

// Lookup validates q (Parse) and checks the phone; with a sender named, the
// result says the sender's status and its service window too. A phone on
// the organization's opt-out list is opted_out, unless no account holds it
// (not_registered comes first). Errors: 422 with every field error at
// once, or for an id and phone of different numbers; 404 when the named
// sender is not one of the organization's numbers; 503 when the network
// does not answer.
func (s *Service) Lookup(ctx context.Context, t db.Tenant, q Query) (Result, error) {
	in, err := q.Parse()
	if err != nil {
		return Result{}, err
	}
	recipient, ref := in.Recipient, in.Sender
	var sn *senders.Sender
	if ref.ID > 0 || ref.Phone != "" {
		found, err := s.senders.Resolve(ctx, t, ref)
		if e, ok := apperr.As(err); ok && e.Code == senders.CodeSenderNotFound {
			return Result{}, apperr.NotFound("sender number")
		}
		if err != nil {
			return Result{}, err
		}
		sn = &found
	}
	senderPhone, senderID := "", int64(0)
	if sn != nil {
		senderPhone, senderID = sn.Phone, sn.ID
	}
	r, err := Check(ctx, s.net, recipient, senderPhone)
	if err != nil {
		return Result{}, err
	}
	c, err := s.contacts.Contact(ctx, t, recipient, senderID)
	if err != nil {
		return Result{}, err
	}
	if c.OptedOut && r.ReasonCode != ReasonNotRegistered {
		r.ReasonCode, r.CanReceive = ReasonOptedOut, false
	}
	if sn != nil {
		r.SenderStatus = &sn.Status
		if s.window > 0 && c.LastInbound != nil {
			if ends := c.LastInbound.Add(s.window); ends.After(s.clock.Now()) {
				r.ServiceWindowExpiresAt = clock.StampPtr(&ends)
			}
		}
	}
	return r, nil
}
