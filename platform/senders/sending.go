package senders

import (
	"context"
	"fmt"

	"github.com/bizmsg/platform/platform/apperr"
	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/phone"
)

// Codes of the send path's sender checks (docs/api.md, §Sending checks).
const (
	// CodeSenderNotActive (422): the sender is pending_verification, suspended
	// or rejected.
	CodeSenderNotActive = "sender_not_active"
	// CodeSenderOwnerUnverified (422): the OTP was accepted but the owner's
	// network account is not verified yet.
	CodeSenderOwnerUnverified = "sender_owner_unverified"
	// CodeSenderNotFound (422): the request names no sender number of the
	// organization.
	CodeSenderNotFound = "sender_not_found"
)

// MessageOwnerUnverified is the Arabic message of CodeSenderOwnerUnverified:
// "The number owner's account must be verified in the messaging network before
// using the sending API."
const MessageOwnerUnverified = "يجب توثيق حساب مالك الرقم في شبكة المراسلة قبل استخدام واجهة الإرسال."

// SenderRef names the sender of a request by id (sender_number_id), by phone
// (sender_phone), or by both (then they must name the same number). Errors
// name those request fields.
type SenderRef struct {
	ID    int64
	Phone string
}

// Resolve reads the sender named by ref, without checking its state (call
// CheckSendable). A phone is normalized to E.164 first. Errors (422): no
// sender given (validation_failed on sender_number_id), a malformed phone
// (validation_failed on sender_phone), no such sender in the organization
// (sender_not_found), or id and phone naming different numbers
// (validation_failed). The send path itself checks the state in its
// acceptance statement; it calls Resolve for these errors.
func (s *Service) Resolve(ctx context.Context, t db.Tenant, ref SenderRef) (Sender, error) {
	var v apperr.Validation
	e164 := ""
	switch {
	case ref.ID == 0 && ref.Phone == "":
		v.Add("sender_number_id", "sender_number_id or sender_phone is required")
	case ref.ID < 0:
		v.Add("sender_number_id", "must be a positive integer")
	}
	if ref.Phone != "" {
		e164 = phone.Required(&v, "sender_phone", ref.Phone)
	}
	if err := v.Err(); err != nil {
		return Sender{}, err
	}
	r, err := s.q.findRow(ctx, s.pool, t, ref.ID, e164)
	if e, ok := apperr.As(err); ok && e.Kind == apperr.KindNotFound {
		field, val := "sender_number_id", fmt.Sprint(ref.ID)
		if ref.ID == 0 {
			field, val = "sender_phone", e164
		}
		nf := apperr.Invalid(CodeSenderNotFound,
			fmt.Sprintf("The organization has no sender number %s.", val))
		nf.Fields = map[string][]string{field: {"is not a sender number of the organization"}}
		return Sender{}, nf
	}
	if err != nil {
		return Sender{}, err
	}
	if ref.ID > 0 && e164 != "" && r.Phone != e164 {
		return Sender{}, fieldError("sender_phone", "names a different sender number than sender_number_id")
	}
	return r.sender(), nil
}

// CheckSendable returns nil when sn may send, else the 422 of docs/api.md:
// sender_owner_unverified (with the Arabic message) for
// pending_account_verification, sender_not_active for every other state.
func CheckSendable(sn Sender) error {
	switch sn.Status {
	case StatusActive:
		return nil
	case StatusPendingAccountVerification:
		return ErrOwnerUnverified()
	default:
		return ErrNotActive(sn.Status)
	}
}

// ErrNotActive is the 422 sender_not_active for a sender in state st.
func ErrNotActive(st Status) *apperr.Error {
	e := apperr.Invalid(CodeSenderNotActive, "The sender number is not active.")
	e.Details = map[string]any{"sender_status": st}
	return e
}

// ErrOwnerUnverified is the 422 sender_owner_unverified.
func ErrOwnerUnverified() *apperr.Error {
	e := apperr.Invalid(CodeSenderOwnerUnverified, MessageOwnerUnverified)
	e.Details = map[string]any{"sender_status": StatusPendingAccountVerification}
	return e
}
