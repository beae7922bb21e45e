package network_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/bizmsg/platform/platform/network"
)

func TestReasonCode(t *testing.T) {
	t.Parallel()
	ok := network.Account{Verified: true, PhoneVerified: true, ReceivingEnabled: true}
	tests := []struct {
		name string
		edit func(*network.Account)
		want string
	}{
		{"reachable", func(*network.Account) {}, network.CodeOK},
		{"owner unverified still receives", func(a *network.Account) { a.Verified = false }, network.CodeOK},
		{"phone unverified", func(a *network.Account) { a.PhoneVerified = false }, network.CodePhoneUnverified},
		{"receiving disabled", func(a *network.Account) { a.ReceivingEnabled = false }, network.CodeReceivingDisabled},
		{"blocks sender", func(a *network.Account) { a.BlocksSender = true }, network.CodeBlockedSender},
		{"phone unverified first", func(a *network.Account) {
			a.PhoneVerified, a.ReceivingEnabled, a.BlocksSender = false, false, true
		}, network.CodePhoneUnverified},
		{"receiving disabled before block", func(a *network.Account) {
			a.ReceivingEnabled, a.BlocksSender = false, true
		}, network.CodeReceivingDisabled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			a := ok
			tt.edit(&a)
			if got := a.ReasonCode(); got != tt.want {
				t.Fatalf("ReasonCode = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestIsPermanent(t *testing.T) {
	t.Parallel()
	pe := &network.PermanentError{Code: network.CodeNotRegistered, Message: "no account"}
	if !network.IsPermanent(fmt.Errorf("deliver: %w", pe)) {
		t.Fatal("a wrapped PermanentError is not permanent")
	}
	if network.IsPermanent(errors.New("connection reset")) || network.IsPermanent(nil) {
		t.Fatal("a plain error is permanent")
	}
	if got := pe.Error(); got != "network: not_registered: no account" {
		t.Fatalf("Error() = %q", got)
	}
}
