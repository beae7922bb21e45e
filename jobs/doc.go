// Package jobs holds the platform's River workers: message delivery, OTP
// delivery, webhook delivery, housekeeping and sender-account sweeps. A
// worker parses its job (argument types in package queue) and calls a
// service to do the work; it holds no business rule of its own beyond
// retry and snooze policy.
//
// jobs sits beside the front doors, above the services: it imports the
// services it runs, and no service imports it (the architecture test in
// integration/architecture_test.go keeps it so).
package jobs

import (
	"github.com/bizmsg/platform/platform/delivery"
	"github.com/bizmsg/platform/platform/senders"
	"github.com/bizmsg/platform/platform/webhooks"
)

// The services are the workers' deliverers.
var (
	_ MessageDeliverer = (*delivery.Service)(nil)
	_ AccountSweeper   = (*senders.Service)(nil)
	_ WebhookAttempter = (*webhooks.Service)(nil)
)
