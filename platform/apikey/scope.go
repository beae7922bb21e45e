package apikey

import (
	"errors"
	"fmt"
	"slices"
)

// Scopes an API key can carry.
const (
	// ScopeMessagesSend allows sending messages and managing sender numbers.
	ScopeMessagesSend = "messages.send"
	// ScopeMessagesRead allows reading message history.
	ScopeMessagesRead = "messages.read"
	// ScopeContactsLookup allows looking up whether a phone can receive messages.
	ScopeContactsLookup = "contacts.lookup"
	// ScopeUsageRead allows reading usage figures and limits.
	ScopeUsageRead = "usage.read"
	// ScopeWebhooksManage allows managing webhook endpoints and reading and
	// redelivering their deliveries.
	ScopeWebhooksManage = "webhooks.manage"
	// ScopeContactsManage allows managing the organization's opt-out list
	// and its opt-out reply texts.
	ScopeContactsManage = "contacts.manage"
	// ScopeTemplatesManage allows creating and deleting message templates
	// (reading them needs messages.send or messages.read).
	ScopeTemplatesManage = "templates.manage"
	// ScopeCampaignsManage allows creating, reading and running campaigns
	// and adding their recipients.
	ScopeCampaignsManage = "campaigns.manage"
	// ScopeAll covers every scope, including ones added later.
	ScopeAll = "*"
)

// knownScopes lists every valid scope, sorted. It is never modified.
var knownScopes = []string{ScopeAll, ScopeCampaignsManage, ScopeContactsLookup, ScopeContactsManage, ScopeMessagesRead,
	ScopeMessagesSend, ScopeTemplatesManage, ScopeUsageRead, ScopeWebhooksManage}

var (
	// ErrNoScopes is returned by [Normalize] for an empty scope list.
	ErrNoScopes = errors.New("at least one scope is required")
	// ErrUnknownScope is returned by [Normalize] for a scope that does not exist.
	ErrUnknownScope = errors.New("unknown scope")
)

// Scopes returns every valid scope, sorted. The slice is a fresh copy.
func Scopes() []string { return slices.Clone(knownScopes) }

// ValidScope reports whether s is a known scope.
func ValidScope(s string) bool {
	_, found := slices.BinarySearch(knownScopes, s)
	return found
}

// Covers reports whether a key holding the scopes have may do what need
// requires: have contains need itself or ScopeAll. Only ScopeAll covers ScopeAll.
func Covers(have []string, need string) bool {
	return slices.Contains(have, ScopeAll) || slices.Contains(have, need)
}

// Subset reports whether every scope in requested is covered by have, the rule
// for creating a key (the new key's scopes must be a subset of the caller's) and
// for revoking one (the caller's scopes must cover the target's). An empty
// requested list is trivially a subset.
func Subset(requested, have []string) bool {
	for _, s := range requested {
		if !Covers(have, s) {
			return false
		}
	}
	return true
}

// Normalize validates scopes and returns them deduplicated and sorted, as they
// are stored. A list holding ScopeAll is reduced to just ScopeAll, since it
// covers the rest. An empty list wraps [ErrNoScopes]; an unknown scope wraps
// [ErrUnknownScope] and names the scope, so the message works as a 422 field error.
func Normalize(scopes []string) ([]string, error) {
	if len(scopes) == 0 {
		return nil, ErrNoScopes
	}
	for _, s := range scopes {
		if !ValidScope(s) {
			return nil, fmt.Errorf("%w %q", ErrUnknownScope, s)
		}
	}
	if slices.Contains(scopes, ScopeAll) {
		return []string{ScopeAll}, nil
	}
	out := slices.Clone(scopes)
	slices.Sort(out)
	return slices.Compact(out), nil
}
