package senders

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/bizmsg/platform/platform/fuzzcheck"
	"github.com/bizmsg/platform/platform/httpx"
	"github.com/bizmsg/platform/platform/phone"
)

// FuzzRequests: any body of the sender-number routes (registration, the
// dashboard's update, the OTP) is decoded (httpx.BindJSON, as the handlers
// do) and checked (as Register, Update and Verify do before touching the
// database) into clean values, or refused as the client's fault naming its
// fields; a control character in the phone (beyond white space around it),
// the display name or the code is refused naming it.
func FuzzRequests(f *testing.F) {
	for _, s := range []string{
		`{"phone":"+14155550100","display_name":"Support","daily_limit_override":250,"otp":"123456"}`,
		`{"phone":" +1 (415) 555-0100\n","display_name":"  Sales  ","daily_limit_override":null,"otp":" 123456 "}`,
		`{"phone":"+1415\u00015550100","display_name":"Su\u0085pport","daily_limit_override":0,"otp":"12345\u0007"}`,
		`{"phone":"+14155550100\u0000","display_name":"x\u0000"}`, `{"phone":14155550100,"display_name":[],"daily_limit_override":"5","otp":123456}`,
		`{"daily_limit_override":1.5}`, `{"display_name":"` + strings.Repeat("é", 101) + `"}`, `{}`, `[]`, ``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var raw map[string]json.RawMessage
		str := func(name string) (string, bool) {
			var s string
			v, ok := raw[name]
			return s, ok && json.Unmarshal(v, &s) == nil
		}
		_ = json.Unmarshal(body, &raw)
		wantRefused := func(err error, name string, bad func(string) bool) {
			t.Helper()
			if s, ok := str(name); ok && bad(s) {
				if err == nil {
					t.Fatalf("%s %q accepted", name, s)
				}
				fuzzcheck.Names(t, err, name)
			}
		}

		var reg RegisterRequest
		if err := httpx.BindJSON(fuzzcheck.JSONContext(body), &reg); err != nil {
			fuzzcheck.Refusal(t, err, "phone", "display_name")
		} else {
			e164, name, err := reg.Input().check()
			wantRefused(err, "phone", fuzzcheck.InnerControl)
			wantRefused(err, "display_name", fuzzcheck.InnerControl)
			if err != nil {
				fuzzcheck.Refusal(t, err, "phone", "display_name")
			} else {
				if p, err := phone.Normalize(e164); err != nil || p != e164 {
					t.Fatalf("phone %q is not E.164", e164)
				}
				checkName(t, name)
			}
		}

		var upd UpdateRequest
		if err := httpx.BindJSON(fuzzcheck.JSONContext(body), &upd); err != nil {
			fuzzcheck.Refusal(t, err, "display_name", "daily_limit_override")
		} else {
			in := upd.Input()
			name, err := in.check()
			wantRefused(err, "display_name", fuzzcheck.InnerControl)
			if err != nil {
				fuzzcheck.Refusal(t, err, "display_name", "daily_limit_override")
			} else {
				checkName(t, name)
				if in.SetDailyLimit && in.DailyLimit != nil && (*in.DailyLimit < 1 || *in.DailyLimit > MaxDailyLimitOverride) {
					t.Fatalf("daily limit %d accepted", *in.DailyLimit)
				}
			}
		}

		var ver VerifyRequest
		if err := httpx.BindJSON(fuzzcheck.JSONContext(body), &ver); err != nil {
			fuzzcheck.Refusal(t, err, "otp")
		} else {
			code, err := checkOTP(ver.OTP)
			wantRefused(err, "otp", fuzzcheck.InnerControl)
			if err != nil {
				fuzzcheck.Refusal(t, err, "otp")
			} else if !validOTPFormat(code) {
				t.Fatalf("code %q accepted", code)
			}
		}
	})
}

// checkName holds an accepted display name to its rules.
func checkName(t *testing.T, name string) {
	t.Helper()
	if name != strings.TrimSpace(name) || utf8.RuneCountInString(name) > MaxDisplayNameLength || fuzzcheck.Control(name) {
		t.Fatalf("display name %q accepted", name)
	}
}
