package web

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/bizmsg/platform/platform/apperr"
	"github.com/bizmsg/platform/platform/senders"
)

// senderView is a sender number as the senders page shows it: its state
// as a badge and what to do next.
type senderView struct {
	senders.Sender
	// Label and Tone render the status badge; Next says what to do now.
	Label, Tone, Next string
	// AwaitingCode: the OTP form and the resend button are shown.
	AwaitingCode bool
	// Limit is the effective daily limit; LimitIsDefault when it is the
	// organization's default.
	Limit          int
	LimitIsDefault bool
	// Error is the failure of this number's last form.
	Error string
}

// badge returns the status badge of a sender state: a short label and a
// tone (its colour class).
func badge(st senders.Status) (label, tone string) {
	switch st {
	case senders.StatusPendingVerification:
		return "Waiting for code", "warn"
	case senders.StatusPendingAccountVerification:
		return "Owner not verified", "info"
	case senders.StatusActive:
		return "Active", "ok"
	case senders.StatusSuspended:
		return "Suspended", "bad"
	case senders.StatusRejected:
		return "Rejected", "bad"
	}
	return string(st), "info"
}

// viewSender describes s in its state (docs/api.md, §Sender numbers): the
// badge and what to do next.
func viewSender(s senders.Sender, orgDefault int) senderView {
	v := senderView{Sender: s, Limit: s.DailyLimit(orgDefault), LimitIsDefault: s.DailyLimitOverride == nil}
	v.Label, v.Tone = badge(s.Status)
	switch s.Status {
	case senders.StatusPendingVerification:
		v.AwaitingCode = true
		if s.OTPSentAt != nil {
			v.Next = fmt.Sprintf("Enter the 6-digit code sent at %s as a message to this number's account on the messaging network. "+
				"A code is valid for 10 minutes; after 5 wrong codes, send a new one.", s.OTPSentAt.UTC().Format("15:04 UTC"))
		} else {
			v.Next = "The code is being delivered as a message to this number's account on the messaging network: " +
				"enter it when it arrives. If the number has no account there yet, create it, then send a new code."
		}
	case senders.StatusPendingAccountVerification:
		v.Next = "The code was accepted. The owner of this number must now verify their account on the messaging network; " +
			"the number becomes active by itself when they have. Nothing to do here."
	case senders.StatusActive:
		v.Next = "Ready to send messages."
	case senders.StatusSuspended:
		v.Next = "The platform operator suspended this number; it cannot send. Contact your account administrator."
	case senders.StatusRejected:
		v.Next = "This number was rejected and can never send. Register another number."
	}
	return v
}

// sendersData is the senders page's data.
type sendersData struct {
	Senders []senderView
}

// sendersPage lists the organization's sender numbers.
func (d *Dashboard) sendersPage(c *gin.Context) {
	d.renderSenders(c, http.StatusOK, pageData{Notice: notice(c)}, 0, "")
}

// renderSenders renders the senders page; errFor/errMsg put a failure next
// to one number's forms.
func (d *Dashboard) renderSenders(c *gin.Context, status int, data pageData, errFor int64, errMsg string) {
	s := session(c)
	list, err := d.cfg.Senders.List(c.Request.Context(), s.Principal.Tenant)
	if err != nil {
		d.internal(c, err)
		return
	}
	views := make([]senderView, 0, len(list))
	for _, sn := range list {
		v := viewSender(sn, s.DefaultDailyLimit)
		if sn.ID == errFor {
			v.Error = errMsg
		}
		views = append(views, v)
	}
	data.Title, data.Nav, data.Data = "Sender numbers", "senders", sendersData{Senders: views}
	d.renderStatus(c, status, "senders", data)
}

// addSender registers a sender number (the OTP is sent by the service).
func (d *Dashboard) addSender(c *gin.Context) {
	s := session(c)
	in := senders.RegisterInput{Phone: c.PostForm("phone")}
	if name := c.PostForm("display_name"); name != "" {
		in.DisplayName = &name
	}
	if _, err := d.cfg.Senders.Register(c.Request.Context(), s.Principal.Tenant, in); err != nil {
		pd := pageData{Form: map[string]string{
			"phone": c.PostForm("phone"), "display_name": c.PostForm("display_name"),
		}}
		if status, ok := d.formStatus(c, err, &pd); ok {
			d.renderSenders(c, status, pd, 0, "")
		}
		return
	}
	redirect(c, "/senders?ok=sender_added")
}

// senderAction runs a per-number form: a failure the user can act on is
// shown next to the number, anything else gets the error page.
func (d *Dashboard) senderAction(c *gin.Context, act func(id int64) (string, error)) {
	id, ok := d.pathID(c, "sender number")
	if !ok {
		return
	}
	okCode, err := act(id)
	if err != nil {
		status, msg, fields, ok := formError(err)
		if !ok || status == http.StatusNotFound {
			d.internal(c, err)
			return
		}
		for _, errs := range fields {
			msg = strings.Join(errs, "; ")
		}
		d.renderSenders(c, status, pageData{}, id, msg)
		return
	}
	redirect(c, fmt.Sprintf("/senders?ok=%s#sender-%d", okCode, id))
}

// verifySender enters the OTP.
func (d *Dashboard) verifySender(c *gin.Context) {
	s := session(c)
	d.senderAction(c, func(id int64) (string, error) {
		sn, err := d.cfg.Senders.Verify(c.Request.Context(), s.Principal.Tenant, id, c.PostForm("otp"))
		if err != nil {
			return "", explainOTP(err)
		}
		if sn.Status == senders.StatusActive {
			return "sender_active", nil
		}
		return "sender_pending", nil
	})
}

// explainOTP adds the attempts left to a wrong-code refusal.
func explainOTP(err error) error {
	e, ok := apperr.As(err)
	if !ok || e.Code != senders.CodeOTPInvalid {
		return err
	}
	if left, ok := e.Details["attempts_remaining"].(int); ok && left > 0 {
		out := *e
		out.Message = fmt.Sprintf("The code is wrong. %d attempt(s) left.", left)
		return &out
	}
	return err
}

// resendOTP sends a new code.
func (d *Dashboard) resendOTP(c *gin.Context) {
	s := session(c)
	d.senderAction(c, func(id int64) (string, error) {
		_, err := d.cfg.Senders.ResendOTP(c.Request.Context(), s.Principal.Tenant, id)
		return "otp_resent", err
	})
}

// setLimit sets (or, left empty, clears) a number's daily limit override;
// the service allows it to owners and admins only.
func (d *Dashboard) setLimit(c *gin.Context) {
	s := session(c)
	d.senderAction(c, func(id int64) (string, error) {
		in := senders.UpdateInput{SetDailyLimit: true}
		if raw := strings.TrimSpace(c.PostForm("daily_limit")); raw != "" {
			n, err := strconv.Atoi(raw)
			if err != nil {
				var v apperr.Validation
				v.Add("daily_limit_override", "must be a whole number of at least 1, or empty for the organization's default")
				return "", v.Err()
			}
			in.DailyLimit = &n
		}
		_, err := d.cfg.Senders.Update(c.Request.Context(), s.Principal.Tenant, id, in, s.IsAdmin())
		return "limit_saved", err
	})
}

// untilNextUTCDay is how long until the daily limits reset.
func untilNextUTCDay(now time.Time) time.Duration {
	now = now.UTC()
	next := time.Date(now.Year(), now.Month(), now.Day()+1, 0, 0, 0, 0, time.UTC)
	return next.Sub(now)
}
