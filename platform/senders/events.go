package senders

import (
	"context"

	"github.com/bizmsg/platform/platform/apperr"
	"github.com/bizmsg/platform/platform/phone"
)

// ActivateOwner applies the network's "account verified" event for the
// account of rawPhone: every pending_account_verification number with that
// phone, in every organization (found in the central directory), becomes
// active at once, exactly as the periodic sweep (ActivateVerifiedOwners)
// would make it, which stays as the safety net for a lost event. The event is
// trusted as it stands (it is signed by the network); the network is not
// asked again. A number whose phone is active in another organization stays
// pending. It returns how many numbers it activated: 0 for a repeated event
// or a phone with no pending number, which is not an error.
//
// A phone that is not a valid number is a validation error on data.phone.
// Failures to activate some numbers are returned joined, after the others.
func (s *Service) ActivateOwner(ctx context.Context, rawPhone string) (int, error) {
	p, err := phone.Normalize(rawPhone)
	if err != nil {
		var v apperr.Validation
		v.Add("data.phone", err.Error())
		return 0, v.Err()
	}
	locs, err := s.dirFind(ctx, p, 0)
	if err != nil {
		return 0, err
	}
	var a activations
	for _, loc := range locs {
		if loc.Status != StatusPendingAccountVerification {
			continue
		}
		if a.add(s.activateAt(ctx, loc, viaEvent)) {
			s.log.InfoContext(ctx, "sender activated by account.verified event",
				"schema", loc.Schema, "sender_id", loc.SenderID)
		}
	}
	return a.result()
}
