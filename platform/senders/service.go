package senders

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bizmsg/platform/platform/apperr"
	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/network"
	"github.com/bizmsg/platform/platform/phone"
	"github.com/bizmsg/platform/platform/queue"
)

// Error codes of the sender rules (docs/api.md, §Sender numbers), beyond
// validation_failed.
const (
	// CodeSenderExists (409): the phone is already registered in the organization.
	CodeSenderExists = "sender_number_exists"
	// CodePhoneActiveElsewhere (409): the phone is active in another organization.
	CodePhoneActiveElsewhere = "phone_active_elsewhere"
	// CodeNotPendingVerification (422): the number is not waiting for an OTP.
	CodeNotPendingVerification = "sender_not_pending_verification"
	// CodeOTPInvalid (422): the code is wrong.
	CodeOTPInvalid = "otp_invalid"
	// CodeOTPExpired (422): the code expired (or none is current); resend.
	CodeOTPExpired = "otp_expired"
	// CodeOTPAttemptsExceeded (422): too many wrong codes; resend.
	CodeOTPAttemptsExceeded = "otp_attempts_exceeded"
	// CodeOTPResendTooSoon (429): a new code was issued less than the cooldown ago.
	CodeOTPResendTooSoon = "otp_resend_too_soon"
	// CodeNetworkUnavailable (503): the messaging network did not answer.
	CodeNetworkUnavailable = "network_unavailable"
)

// RegisterInput is a registration request.
type RegisterInput struct {
	Phone string
	// DisplayName is optional.
	DisplayName *string
}

// Register validates in, creates the number in pending_verification, issues
// its OTP and queues the OTP's delivery and the number's directory entry,
// all in one transaction, and moves them out of the outbox after its
// commit (toCentral, flush).
func (s *Service) Register(ctx context.Context, t db.Tenant, in RegisterInput) (Sender, error) {
	e164, name, err := in.check()
	if err != nil {
		return Sender{}, err
	}
	now := s.clock.Now().Truncate(time.Microsecond)
	r := &row{
		Phone:              e164,
		DisplayName:        name,
		Status:             StatusPendingVerification,
		VerificationStatus: VerificationPending,
		CreatedAt:          now,
		UpdatedAt:          now,
	}
	err = s.inTx(ctx, func(tx pgx.Tx) error {
		if err := s.q.insertRow(ctx, tx, t, r); err != nil {
			if db.IsUniqueViolation(err, "") {
				return apperr.Wrap(err, apperr.KindConflict, CodeSenderExists,
					"This phone number is already registered as a sender number of the organization.")
			}
			return fmt.Errorf("insert sender number: %w", err)
		}
		if err := s.issueOTP(ctx, tx, t, r, now); err != nil {
			return err
		}
		return s.toCentral(ctx, tx, t, r, nil)
	})
	if err != nil {
		return Sender{}, err
	}
	s.flush(ctx, t)
	return r.sender(), nil
}

// check validates a registration (422 naming each bad field) and returns
// the phone in E.164 and the trimmed display name.
func (in RegisterInput) check() (e164, name string, err error) {
	var v apperr.Validation
	e164 = phone.Required(&v, "phone", in.Phone)
	if in.DisplayName != nil {
		name = v.TrimmedText("display_name", *in.DisplayName, MaxDisplayNameLength)
	}
	if err := v.Err(); err != nil {
		return "", "", err
	}
	return e164, name, nil
}

// issueOTP gives r a new code (a new generation, fresh attempts, not yet
// sent), saves it and queues its delivery in tx.
func (s *Service) issueOTP(ctx context.Context, tx pgx.Tx, t db.Tenant, r *row, now time.Time) error {
	code, err := newOTP()
	if err != nil {
		return err
	}
	r.OTPGeneration++
	binding := otpBinding(t, r.Phone, r.ID, r.OTPGeneration)
	r.OTPHash = s.hashOTP(binding, code)
	expires := now.Add(s.cfg.OTPTTL)
	r.OTPExpiresAt = &expires
	r.OTPAttempts = 0
	r.OTPSentAt = nil
	issued := now
	r.OTPIssuedAt = &issued
	if err := s.q.saveRow(ctx, tx, t, r, now); err != nil {
		return err
	}
	sealed, err := s.sealer.Seal(code, binding)
	if err != nil {
		return fmt.Errorf("seal otp: %w", err)
	}
	args := queue.OTPArgs{TenantRef: queue.RefOf(t), SenderID: r.ID, Generation: r.OTPGeneration, SealedOTP: sealed}
	if _, err := s.jobs.InsertTx(ctx, tx, args, nil); err != nil {
		return fmt.Errorf("queue otp delivery: %w", err)
	}
	return nil
}

// List returns every sender number of the organization, newest first.
func (s *Service) List(ctx context.Context, t db.Tenant) ([]Sender, error) {
	rows, err := listRows(ctx, s.db.Bun, t)
	if err != nil {
		return nil, err
	}
	out := make([]Sender, len(rows))
	for i := range rows {
		out[i] = rows[i].sender()
	}
	return out, nil
}

// Get returns the organization's sender number id (404 when it has none).
func (s *Service) Get(ctx context.Context, t db.Tenant, id int64) (Sender, error) {
	if id <= 0 {
		return Sender{}, apperr.NotFound("sender number")
	}
	r, err := getRow(ctx, s.db.Bun, t, id)
	if err != nil {
		return Sender{}, err
	}
	return r.sender(), nil
}

// UpdateInput is a partial update from the dashboard. Nil fields are left
// unchanged.
type UpdateInput struct {
	DisplayName *string
	// SetDailyLimit says whether daily_limit_override was given; DailyLimit is
	// its value (nil clears the override: the organization default applies).
	SetDailyLimit bool
	DailyLimit    *int
}

// Update changes the display name and, when allowLimit (the caller is an
// owner or admin of the organization), the daily limit override. A member
// asking to change the limit gets 403 and nothing changes.
func (s *Service) Update(ctx context.Context, t db.Tenant, id int64, in UpdateInput, allowLimit bool) (Sender, error) {
	if in.SetDailyLimit && !allowLimit {
		return Sender{}, apperr.Forbidden("insufficient_role",
			"Only owners and admins of the organization can change daily_limit_override.")
	}
	name, err := in.check()
	if err != nil {
		return Sender{}, err
	}
	if id <= 0 {
		return Sender{}, apperr.NotFound("sender number")
	}
	var out Sender
	err = s.inRowTx(ctx, t, id, func(tx pgx.Tx, r *row) error {
		if in.DisplayName != nil {
			r.DisplayName = name
		}
		if in.SetDailyLimit {
			r.DailyLimitOverride = in.DailyLimit
		}
		if in.DisplayName != nil || in.SetDailyLimit {
			if err := s.q.saveRow(ctx, tx, t, r, s.clock.Now()); err != nil {
				return err
			}
		}
		out = r.sender()
		return nil
	})
	return out, err
}

// check validates an update (422 naming each bad field) and returns the
// trimmed display name.
func (in UpdateInput) check() (string, error) {
	var (
		v    apperr.Validation
		name string
	)
	if in.DisplayName != nil {
		name = v.TrimmedText("display_name", *in.DisplayName, MaxDisplayNameLength)
	}
	if in.SetDailyLimit && in.DailyLimit != nil {
		validateDailyLimit(&v, "daily_limit_override", *in.DailyLimit)
	}
	return name, v.Err()
}

// checkOTP validates a code's form (422 naming otp) and returns it
// trimmed.
func checkOTP(code string) (string, error) {
	code = strings.TrimSpace(code)
	if code == "" {
		return "", fieldError("otp", "is required")
	}
	if !validOTPFormat(code) {
		return "", fieldError("otp", fmt.Sprintf("must be the %d-digit code", OTPDigits))
	}
	return code, nil
}

// Verify checks code against the number's current OTP. Accepted, the number
// becomes active when its owner's network account is verified and
// pending_account_verification otherwise (no new code needed). A wrong code
// counts an attempt; see the Code* constants for the refusals.
func (s *Service) Verify(ctx context.Context, t db.Tenant, id int64, code string) (Sender, error) {
	code, err := checkOTP(code)
	if err != nil {
		return Sender{}, err
	}
	// Read first (no lock) to ask the network about the owner outside the
	// transaction; everything is checked again under the row lock.
	pre, err := s.Get(ctx, t, id)
	if err != nil {
		return Sender{}, err
	}
	if pre.Status != StatusPendingVerification {
		return Sender{}, notPending(pre.Status)
	}
	ownerVerified, err := s.ownerVerified(ctx, pre.Phone)
	if err != nil {
		return Sender{}, err
	}
	// An owner verified makes the number active: its phone's claim is
	// taken first, in a transaction of its own, and released below unless
	// the number became active.
	claimed := false
	if ownerVerified {
		if claimed, err = s.claimFirst(ctx, t, pre.ID, pre.Phone); err != nil {
			return Sender{}, err
		}
	}

	var (
		out       Sender
		refusal   error // a refusal whose bookkeeping (attempts) must commit
		activated bool
	)
	err = s.inRowTx(ctx, t, id, func(tx pgx.Tx, r *row) error {
		now := s.clock.Now()
		switch {
		case r.Status != StatusPendingVerification:
			return notPending(r.Status)
		case r.OTPAttempts >= s.cfg.MaxOTPAttempts:
			return apperr.Invalid(CodeOTPAttemptsExceeded,
				"Too many wrong codes. Request a new code (resend-otp) and try again.")
		case r.OTPHash == nil || r.OTPExpiresAt == nil || !now.Before(*r.OTPExpiresAt):
			return apperr.Invalid(CodeOTPExpired, "The code has expired. Request a new code (resend-otp).")
		}
		if !s.otpMatches(otpBinding(t, r.Phone, r.ID, r.OTPGeneration), code, r.OTPHash) {
			r.OTPAttempts++
			if err := s.q.saveRow(ctx, tx, t, r, now); err != nil {
				return err
			}
			left := s.cfg.MaxOTPAttempts - r.OTPAttempts
			e := apperr.Invalid(CodeOTPInvalid, "The code is wrong.")
			if left == 0 {
				e.Message = "The code is wrong. No attempts are left: request a new code (resend-otp)."
			}
			e.Details = map[string]any{"attempts_remaining": left}
			refusal = e
			return nil
		}
		// Accepted. A phone active in another organization cannot be verified
		// here: nothing changes and the code stays usable.
		if ownerVerified {
			held := false
			if claimed && r.Phone == pre.Phone {
				var err error
				if held, err = s.q.claimHeld(ctx, tx, t.OrgID, r); err != nil {
					return err
				}
			}
			if !held {
				return errActiveElsewhere()
			}
			r.Status = StatusActive
			r.ActivatedAt = &now
		} else {
			elsewhere, err := s.q.heldElsewhere(ctx, tx, t.OrgID, r)
			if err != nil {
				return err
			}
			if elsewhere {
				return errActiveElsewhere()
			}
			r.Status = StatusPendingAccountVerification
		}
		r.VerificationStatus = VerificationVerified
		r.VerifiedAt = &now
		r.clearOTP()
		if err := s.q.saveRow(ctx, tx, t, r, now); err != nil {
			return err
		}
		if err := s.statusChanged(ctx, tx, t, r); err != nil {
			return err
		}
		if err := s.toCentral(ctx, tx, t, r, nil); err != nil {
			return err
		}
		out, activated = r.sender(), r.Status == StatusActive
		return nil
	})
	if claimed && (err != nil || !activated) {
		s.compensate(ctx, t, pre.ID, pre.Phone)
	}
	if err != nil {
		return Sender{}, err
	}
	if refusal != nil {
		return Sender{}, refusal
	}
	s.flush(ctx, t)
	return out, nil
}

// ResendOTP issues a new code for a number in pending_verification and queues
// its delivery; the previous code stops working. At most one code per
// cooldown (429 with Retry-After).
func (s *Service) ResendOTP(ctx context.Context, t db.Tenant, id int64) (Sender, error) {
	if id <= 0 {
		return Sender{}, apperr.NotFound("sender number")
	}
	var out Sender
	err := s.inRowTx(ctx, t, id, func(tx pgx.Tx, r *row) error {
		if r.Status != StatusPendingVerification {
			return notPending(r.Status)
		}
		now := s.clock.Now()
		if r.OTPIssuedAt != nil {
			if wait := r.OTPIssuedAt.Add(s.cfg.ResendCooldown).Sub(now); wait > 0 {
				return apperr.RateLimited(CodeOTPResendTooSoon,
					fmt.Sprintf("A new code can be requested once every %s.", humanDuration(s.cfg.ResendCooldown)), wait)
			}
		}
		if err := s.issueOTP(ctx, tx, t, r, now); err != nil {
			return err
		}
		out = r.sender()
		return nil
	})
	if err != nil {
		return Sender{}, err
	}
	s.flush(ctx, t)
	return out, nil
}

// ownerVerified asks the network whether the account holding phone is
// verified; no account counts as unverified. A failure of the platform's
// own (network.IsPlatform) is returned as it is, not as the network's.
func (s *Service) ownerVerified(ctx context.Context, phone string) (bool, error) {
	ok, err := s.net.Verified(ctx, phone)
	switch {
	case errors.Is(err, network.ErrNotFound):
		return false, nil
	case network.IsPlatform(err):
		return false, fmt.Errorf("network: owner verified: %w", err)
	case err != nil:
		return false, apperr.Wrap(err, apperr.KindUnavailable, CodeNetworkUnavailable,
			"The messaging network is temporarily unavailable. Try again later.")
	}
	return ok, nil
}

func notPending(st Status) *apperr.Error {
	e := apperr.Invalid(CodeNotPendingVerification,
		fmt.Sprintf("The sender number is not waiting for a verification code (its status is %s).", st))
	e.Details = map[string]any{"status": st}
	return e
}

func errActiveElsewhere() *apperr.Error {
	return apperr.Conflict(CodePhoneActiveElsewhere,
		"This phone number is already active as a sender number in another organization.")
}

func fieldError(field, msg string) error {
	var v apperr.Validation
	v.Add(field, msg)
	return v.Err()
}

func validateDailyLimit(v *apperr.Validation, field string, n int) {
	if n < 1 || n > MaxDailyLimitOverride {
		v.Add(field, fmt.Sprintf("must be an integer from 1 to %d, or null for the organization default", MaxDailyLimitOverride))
	}
}

// humanDuration renders whole minutes or seconds ("1 minute", "30 seconds").
func humanDuration(d time.Duration) string {
	plural := func(n int64, unit string) string {
		if n == 1 {
			return "1 " + unit
		}
		return fmt.Sprintf("%d %ss", n, unit)
	}
	if d >= time.Minute && d%time.Minute == 0 {
		return plural(int64(d/time.Minute), "minute")
	}
	return plural(int64((d+time.Second-1)/time.Second), "second")
}
