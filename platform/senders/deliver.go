package senders

import (
	"context"
	"errors"
	"fmt"

	"github.com/bizmsg/platform/platform/apperr"
	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/network"
	"github.com/bizmsg/platform/platform/queue"
)

// OTPReference is the network delivery reference of a sender's OTP of one
// generation. Retried deliveries of one code reuse it, so the owner receives
// each code once.
func OTPReference(t db.Tenant, senderID int64, generation int) string {
	return fmt.Sprintf("otp:%s:%d:%d", t.Schema, senderID, generation)
}

// DeliverOTP delivers the code of an OTP job (the Call of its
// jobs.NetworkWorker). It sends nothing, successfully, when the code is no
// longer current (a newer code, the number left pending_verification, the
// code expired, or it was already delivered) or when no network account
// holds the phone; otp_sent_at then stays null. Network refusals come back as *network.PermanentError, other
// failures as errors worth retrying.
func (s *Service) DeliverOTP(ctx context.Context, args queue.OTPArgs) error {
	t, err := args.Tenant()
	if err != nil {
		return &network.PermanentError{Code: network.CodeInvalidMessage, Message: err.Error()}
	}
	log := s.log.With("schema", t.Schema, "sender_id", args.SenderID, "otp_generation", args.Generation)
	r, err := getRow(ctx, s.db.Bun, t, args.SenderID)
	if e, ok := apperr.As(err); ok && e.Kind == apperr.KindNotFound {
		log.Info("otp not sent: sender number no longer exists")
		return nil
	}
	if err != nil {
		return err
	}
	now := s.clock.Now()
	switch {
	case r.Status != StatusPendingVerification || r.OTPGeneration != args.Generation:
		log.Info("otp not sent: superseded", "status", r.Status, "current_generation", r.OTPGeneration)
		return nil
	case r.OTPExpiresAt == nil || !now.Before(*r.OTPExpiresAt):
		log.Info("otp not sent: expired before delivery")
		return nil
	case r.OTPSentAt != nil:
		return nil
	}
	binding := otpBinding(t, r.Phone, r.ID, r.OTPGeneration)
	code, err := s.sealer.Open(args.SealedOTP, binding)
	if err != nil {
		return &network.PermanentError{Code: network.CodeInvalidMessage, Message: "sealed code does not open: " + err.Error()}
	}
	if _, err := s.net.Lookup(ctx, r.Phone, ""); errors.Is(err, network.ErrNotFound) {
		log.Info("otp not sent: no network account holds the phone")
		return nil
	} else if err != nil {
		return fmt.Errorf("look up owner: %w", err)
	}
	orgName, err := s.organizationName(ctx, t.OrgID)
	if err != nil {
		return err
	}
	d, err := s.net.Deliver(ctx, network.Message{
		Reference: OTPReference(t, r.ID, r.OTPGeneration),
		FromPhone: "", // the platform's own service account
		ToPhone:   r.Phone,
		Media:     network.Media{Type: "text", Content: s.otpText(orgName, r.Phone, code)},
	})
	if err != nil {
		return fmt.Errorf("deliver otp: %w", err)
	}
	if _, err := s.db.Bun.NewUpdate().Model((*row)(nil)).ModelTableExpr(table(t)).
		Set("otp_sent_at = ?", now).Set("updated_at = greatest(s.updated_at, ?)", now).
		Where("s.id = ?", r.ID).Where("s.otp_generation = ?", r.OTPGeneration).Where("s.otp_sent_at IS NULL").
		Exec(ctx); err != nil {
		return fmt.Errorf("record otp delivery: %w", err)
	}
	log.Info("otp delivered", "network_message_id", d.MessageID)
	return nil
}

// otpText is the OTP message: who it is from, what it is for, the code, its
// lifetime, and a warning not to share it.
func (s *Service) otpText(orgName, phone, code string) string {
	return fmt.Sprintf("%s: %q is registering %s as a sender number. "+
		"Your verification code is %s. It expires in %s. "+
		"Enter it in the %s dashboard only if you requested this; never share it with anyone.",
		s.cfg.PlatformName, orgName, phone, code, humanDuration(s.cfg.OTPTTL), s.cfg.PlatformName)
}
