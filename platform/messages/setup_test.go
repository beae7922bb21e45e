package messages_test

import (
	"testing"

	"github.com/bizmsg/platform/platform/messages/messagestest"
)

// fixture is a test's bundle (messagestest.Fixture), with the helpers of
// this package's tests.
type fixture struct{ *messagestest.Fixture }

// setup is a bundle whose senders' throttle is rate and burst.
func setup(t *testing.T, rate float64, burst int) *fixture { return setupWith(t, rate, burst, nil) }

// setupWith is setup with edit applied to the services' configs.
func setupWith(t *testing.T, rate float64, burst int, edit func(*messagestest.Config)) *fixture {
	t.Helper()
	return &fixture{messagestest.Setup(t, rate, burst, edit)}
}

var start = messagestest.Start

func ph(i int) string { return messagestest.Ph(i) }
