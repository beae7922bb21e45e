package senders

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"fmt"
	"math/big"
	"strconv"

	"github.com/bizmsg/platform/platform/db"
)

// otpSpace is the number of distinct codes, 10^OTPDigits.
var otpSpace = big.NewInt(1_000_000)

// newOTP draws a uniformly random 6-digit code from crypto/rand.
func newOTP() (string, error) {
	n, err := rand.Int(rand.Reader, otpSpace)
	if err != nil {
		return "", fmt.Errorf("draw otp: %w", err)
	}
	return fmt.Sprintf("%0*d", OTPDigits, n.Int64()), nil
}

// validOTPFormat reports whether s is exactly OTPDigits ASCII digits.
func validOTPFormat(s string) bool {
	if len(s) != OTPDigits {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// otpBinding identifies one issued code: the tenant, the number and the
// code's generation. It is the hash's context and the seal's AAD, so a hash
// or a sealed code copied to another row or generation never matches.
func otpBinding(t db.Tenant, phone string, senderID int64, generation int) []byte {
	return []byte(t.Schema + "|" + phone + "|" + strconv.FormatInt(senderID, 10) + "|" + strconv.Itoa(generation))
}

// hashOTP returns HMAC-SHA-256 under the service's derived hash key of the
// binding and the code. A 6-digit code is trivially brute-forced from a plain
// or salted hash; keyed with a secret that is not in the database, a stolen
// table reveals nothing.
func (s *Service) hashOTP(binding []byte, code string) []byte {
	m := hmac.New(sha256.New, s.hashKey)
	m.Write(binding)
	m.Write([]byte{0})
	m.Write([]byte(code))
	return m.Sum(nil)
}

// otpMatches compares in constant time.
func (s *Service) otpMatches(binding []byte, code string, hash []byte) bool {
	return hmac.Equal(s.hashOTP(binding, code), hash)
}
