package webhooks

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"
)

// SecretPrefix marks an endpoint's signing secret; the rest is the key in
// standard base64 (Standard Webhooks' form).
const SecretPrefix = "whsec_"

// secretBytes is the length of a signing key: 256 bits (at least 24 bytes
// are required).
const secretBytes = 32

// Headers of every webhook request (Standard Webhooks), written lower-case
// as the specification names them.
const (
	HeaderID        = "webhook-id"
	HeaderTimestamp = "webhook-timestamp"
	HeaderSignature = "webhook-signature"
)

// newSecret returns a fresh signing secret: SecretPrefix and the base64 of
// 32 bytes from crypto/rand.
func newSecret() string {
	b := make([]byte, secretBytes)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (it crashes the program instead)
	return SecretPrefix + base64.StdEncoding.EncodeToString(b)
}

// newEventID returns an event's public id, its webhook-id: "msg_" and 26
// characters of crypto/rand base32 (130 bits).
func newEventID() string { return "msg_" + rand.Text() }

// signature returns the webhook-signature header of body for the message
// id sent at unix time ts: one "v1,<base64 HMAC-SHA256>" per secret, over
// "id.ts.body" keyed with the secret's decoded bytes, separated by spaces.
func signature(secrets []string, id string, ts int64, body []byte) (string, error) {
	sigs := make([]string, 0, len(secrets))
	for _, secret := range secrets {
		key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, SecretPrefix))
		if err != nil {
			return "", fmt.Errorf("decode signing secret: %w", err)
		}
		mac := hmac.New(sha256.New, key)
		mac.Write([]byte(id))
		mac.Write([]byte{'.'})
		mac.Write([]byte(strconv.FormatInt(ts, 10)))
		mac.Write([]byte{'.'})
		mac.Write(body)
		sigs = append(sigs, "v1,"+base64.StdEncoding.EncodeToString(mac.Sum(nil)))
	}
	return strings.Join(sigs, " "), nil
}
