package delivery

import (
	"fmt"
	"time"
)

// Delivery order (docs/api.md, §Delivery order; docs/design.md, §Delivery
// order): the messages of a conversation, one sender number to one
// recipient, reach the network in id order, one job delivering them at a
// time.
//
//   - The claim (claim_one, claim_many, claimLocked) finds, for each
//     message, the nearest earlier message of its conversation still queued
//     (blocker, statements.go); a message with one waits (orderWaitError),
//     unclaimed, and takes no throttle token: only a claimed message
//     reserves one.
//   - A claimed message is held by the claiming job until the claim lapses
//     (Config.ClaimLease); another job's claim of it waits (heldError).
//   - The job that delivers or fails a message carries its conversation on:
//     it claims the conversation's next message (the query next) and
//     delivers it in the same run, and so on, for as long as its run may wait
//     (Config.MaxInlineWait); then it hands the next message to a new job
//     of its own (handOver). So a conversation's backlog goes from one
//     message to the next without a snooze between them, in whichever
//     process holds it, and the jobs of the messages behind it end: every
//     queued message is delivered by its own job or by the job that
//     finishes the message before it. A message that fails for good, or
//     has been failing for Config.OrderWindow, no longer holds the others
//     back: its job's attempt that finds so hands the next message over.

// conversation is the pair whose messages are delivered in order: a sender
// number and a recipient's phone.
type conversation struct {
	sender int64
	to     string
}

// orderWaitError is the outcome of a delivery that must wait for an earlier
// message of its conversation, blocker, to leave queued.
type orderWaitError struct {
	blocker int64
}

func (w *orderWaitError) Error() string {
	return fmt.Sprintf("waits for message %d, earlier in its conversation and still queued", w.blocker)
}

// heldError is the outcome of a delivery whose message another job's
// unlapsed claim holds: that job delivers it.
type heldError struct{}

func (heldError) Error() string { return "held by another delivery job's claim" }

// throttledError is the outcome of a delivery that claimed its message and
// reserved the sender's next token, due after delay: the job waits for it,
// in its run or snoozed, and finds it reserved under the message's ticket
// (ticket) when it claims the message again.
type throttledError struct {
	delay time.Duration
}

func (e *throttledError) Error() string {
	return fmt.Sprintf("the sender's next token is due in %s", e.delay)
}
