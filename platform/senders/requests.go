package senders

import (
	"bytes"
	"encoding/json"
	"reflect"
)

// RegisterRequest is the JSON body of POST sender-numbers on both APIs. Any
// other field (status, daily_limit_override, ...) is ignored: nothing else is
// client-settable at registration.
type RegisterRequest struct {
	Phone       string  `json:"phone"`
	DisplayName *string `json:"display_name"`
}

// Input returns the service input.
func (r RegisterRequest) Input() RegisterInput {
	return RegisterInput{Phone: r.Phone, DisplayName: r.DisplayName}
}

// UpdateRequest is the JSON body of the dashboard's PATCH sender-numbers/{id}.
// Absent fields are unchanged; "daily_limit_override": null clears the
// override.
type UpdateRequest struct {
	DisplayName        *string     `json:"display_name"`
	DailyLimitOverride OptionalInt `json:"daily_limit_override"`
}

// Input returns the service input.
func (r UpdateRequest) Input() UpdateInput {
	return UpdateInput{
		DisplayName:   r.DisplayName,
		SetDailyLimit: r.DailyLimitOverride.Set,
		DailyLimit:    r.DailyLimitOverride.Value,
	}
}

// VerifyRequest is the JSON body of POST sender-numbers/{id}/verify.
type VerifyRequest struct {
	OTP string `json:"otp"`
}

// OptionalInt is a JSON integer field that tells "absent" (Set false) from
// null (Set true, Value nil) and a value.
type OptionalInt struct {
	Set   bool
	Value *int
}

// UnmarshalJSON records that the field was present and reads null or an
// integer; anything else is a type error naming the field (422).
func (o *OptionalInt) UnmarshalJSON(b []byte) error {
	o.Set = true
	if bytes.Equal(bytes.TrimSpace(b), []byte("null")) {
		o.Value = nil
		return nil
	}
	var n int
	if err := json.Unmarshal(b, &n); err != nil {
		return &json.UnmarshalTypeError{Value: "value", Type: reflect.TypeFor[int]()}
	}
	o.Value = &n
	return nil
}
