package integration

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/bizmsg/platform/platform/network/builtin"
	"github.com/bizmsg/platform/platform/senders"
)

// The audit log over the Central API: docs/api.md, §Audit log.

const auditPath = centralPath + "/audit-log"

// auditEntry is the entry resource.
type auditEntry struct {
	ID    int64 `json:"id"`
	Actor struct {
		Type string  `json:"type"`
		ID   *int64  `json:"id"`
		Name *string `json:"name"`
	} `json:"actor"`
	Action string `json:"action"`
	Target struct {
		Type string `json:"type"`
		ID   int64  `json:"id"`
	} `json:"target"`
	Details   map[string]any `json:"details"`
	CreatedAt time.Time      `json:"created_at"`
}

// who renders an entry's actor, action and target for comparisons:
// "user:3 api_key.create api_key:12".
func (a auditEntry) who() string {
	actor := a.Actor.Type
	if a.Actor.ID != nil {
		actor += ":" + strconv.FormatInt(*a.Actor.ID, 10)
	}
	return fmt.Sprintf("%s %s %s:%d", actor, a.Action, a.Target.Type, a.Target.ID)
}

// auditLog reads every page of the log with query, as header.
func auditLog(t *testing.T, e *Env, header map[string]string, query string) []auditEntry {
	t.Helper()
	var all []auditEntry
	cursor := ""
	for {
		q, err := url.ParseQuery(query)
		if err != nil {
			t.Fatal(err)
		}
		q.Set("limit", "2")
		if cursor != "" {
			q.Set("cursor", cursor)
		}
		r := e.Do(Request{Method: http.MethodGet, Path: auditPath + "?" + q.Encode(), Header: header})
		if r.Status != http.StatusOK {
			t.Fatalf("audit log ?%s = %d %s", q.Encode(), r.Status, r.Body)
		}
		var page struct {
			Data       []auditEntry `json:"data"`
			NextCursor *string      `json:"next_cursor"`
		}
		r.JSON(t, &page)
		all = append(all, page.Data...)
		if page.NextCursor == nil {
			return all
		}
		cursor = *page.NextCursor
	}
}

// addMember adds a member with role to org and returns their id and bearer
// header.
func addMember(t *testing.T, e *Env, org *Org, name, role string) (int64, map[string]string) {
	t.Helper()
	email := uniqueEmail(role)
	r := e.Do(Request{Method: http.MethodPost, Path: centralPath + "/users", Header: org.Bearer(), Body: map[string]any{
		"name": name, "email": email, "role": role, "password": "initial password"}})
	if r.Status != http.StatusCreated {
		t.Fatalf("add %s = %d %s", role, r.Status, r.Body)
	}
	var u struct {
		Data struct {
			ID int64 `json:"id"`
		} `json:"data"`
	}
	r.JSON(t, &u)
	r = e.Do(Request{Method: http.MethodPost, Path: centralPath + "/login", Body: map[string]any{"email": email, "password": "initial password"}})
	if r.Status != http.StatusOK {
		t.Fatalf("login %s = %d %s", role, r.Status, r.Body)
	}
	return u.Data.ID, Bearer(r.Map(t)["access_token"].(string))
}

// Who did what to keys, members and sender numbers, by members (directly
// and through an API key), the operator and the network; filtered, paged,
// for owners and admins only, and per organization.
func TestAuditLog(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)
	e := startMsg(t, Options{Start: start})
	ctx := context.Background()
	org, other := e.Register(t), e.Register(t)
	id := func(n int64) string { return strconv.FormatInt(n, 10) }

	adminID, admin := addMember(t, e.Env, org, "Grace Admin", "admin")
	memberID, member := addMember(t, e.Env, org, "Max Member", "member")
	r := e.Do(Request{Method: http.MethodPost, Path: centralPath + "/api-keys", Header: admin,
		Body: map[string]any{"name": "by the admin", "scopes": []string{"usage.read"}}})
	if r.Status != http.StatusCreated {
		t.Fatalf("admin creates a key = %d %s", r.Status, r.Body)
	}
	var adminKey keyResource
	r.JSON(t, &adminKey)

	// Ten minutes later (within the access tokens' lifetime): a key through
	// the Tenant API, a revocation, a number the network activates, the
	// operator's suspension, a removal.
	e.Clock.Advance(10 * time.Minute)
	later := e.Clock.Now()
	viaKey := mustCreateKey(t, e.Env, org.APIKey, "messages.read")
	if r := e.Do(Request{Method: http.MethodDelete, Path: centralPath + "/api-keys/" + id(adminKey.ID), Header: org.Bearer()}); r.Status != http.StatusNoContent {
		t.Fatalf("revoke = %d %s", r.Status, r.Body)
	}
	const phone = "+14155550190"
	e.account(senderSpec(phone, false))
	sid := e.registerSender(org, phone)
	if st := e.confirmSender(org, sid, phone); st != "pending_account_verification" {
		t.Fatalf("sender is %s", st)
	}
	if _, err := e.net.VerifyAccount(ctx, phone); err != nil {
		t.Fatal(err)
	}
	if n, err := e.App.Senders.ActivateVerifiedOwners(ctx); err != nil || n != 1 {
		t.Fatalf("sweep: %d %v", n, err)
	}
	if _, err := e.App.Senders.Suspend(ctx, senders.AdminTarget{Phone: phone}); err != nil {
		t.Fatal(err)
	}
	if r := e.Do(Request{Method: http.MethodDelete, Path: centralPath + "/users/" + id(adminID), Header: org.Bearer()}); r.Status != http.StatusNoContent {
		t.Fatalf("remove admin = %d %s", r.Status, r.Body)
	}

	owner := "user:" + id(org.OwnerID)
	all := []string{
		owner + " member.remove user:" + id(adminID),
		"operator sender.suspend sender_number:" + id(sid),
		"network sender.activate sender_number:" + id(sid),
		owner + " api_key.revoke api_key:" + id(adminKey.ID),
		owner + " api_key.create api_key:" + id(viaKey.ID),
		"user:" + id(adminID) + " api_key.create api_key:" + id(adminKey.ID),
		owner + " member.add user:" + id(memberID),
		owner + " member.add user:" + id(adminID),
		owner + " api_key.create api_key:" + id(org.APIKeyID),
	}
	tests := []struct {
		name  string
		query string
		want  []string
	}{
		{"everything, newest first", "", all},
		{"one member", "actor=" + id(adminID), all[5:6]},
		{"one member, prefixed", "actor=user:" + id(adminID), all[5:6]},
		{"the network", "actor=network", all[2:3]},
		{"the operator", "actor=operator", all[1:2]},
		{"nobody as the system", "actor=system", nil},
		{"an action", "action=api_key.create", []string{all[4], all[5], all[8]}},
		{"a family", "action=member", []string{all[0], all[6], all[7]}},
		{"a key's history", "target=api_key:" + id(adminKey.ID), []string{all[3], all[5]}},
		{"a number's history", "target=sender_number:" + id(sid), all[1:3]},
		{"since", "since=" + later.Format(time.RFC3339), all[:5]},
		{"until", "until=" + later.Format(time.RFC3339), all[5:]},
		{"combined", "actor=" + id(org.OwnerID) + "&action=api_key&since=" + later.Format(time.RFC3339), all[3:5]},
		{"another organization's key", "target=api_key:" + id(other.APIKeyID), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var got []string
			for _, a := range auditLog(t, e.Env, org.Bearer(), tt.query) {
				got = append(got, a.who())
			}
			if !slices.Equal(got, tt.want) {
				t.Fatalf("?%s:\n got  %q\n want %q", tt.query, got, tt.want)
			}
		})
	}

	// The entries' names and details: the removed admin's name stays, the
	// key made through the Tenant API names the key it came through, the
	// network's activation says how it learnt of it.
	entries := auditLog(t, e.Env, org.Bearer(), "")
	byAdmin, viaAPI, activated, suspended := entries[5], entries[4], entries[2], entries[1]
	if byAdmin.Actor.Name == nil || *byAdmin.Actor.Name != "Grace Admin" || byAdmin.Details["name"] != "by the admin" || !byAdmin.CreatedAt.Equal(start) {
		t.Fatalf("the admin's entry %+v", byAdmin)
	}
	if viaAPI.Details["via_api_key_id"] != float64(org.APIKeyID) || viaAPI.Actor.Name == nil || *viaAPI.Actor.Name != "Owner" {
		t.Fatalf("the Tenant API's entry %+v", viaAPI)
	}
	if activated.Actor.ID != nil || activated.Actor.Name != nil || activated.Details["via"] != "sweep" ||
		activated.Details["status"] != "active" || activated.Details["phone"] != phone || !activated.CreatedAt.Equal(later) {
		t.Fatalf("the network's entry %+v", activated)
	}
	if suspended.Details["previous_status"] != "active" || suspended.Details["status"] != "suspended" {
		t.Fatalf("the operator's entry %+v", suspended)
	}

	// Owners and admins only; another organization sees its own entries.
	wantError(t, e.Do(Request{Method: http.MethodGet, Path: auditPath, Header: member}), http.StatusForbidden, "insufficient_role")
	wantError(t, e.Do(Request{Method: http.MethodGet, Path: auditPath, Header: org.Key()}), http.StatusUnauthorized, "missing_token")
	if got := auditLog(t, e.Env, other.Bearer(), ""); len(got) != 1 || got[0].who() != "user:"+id(other.OwnerID)+" api_key.create api_key:"+id(other.APIKeyID) {
		t.Fatalf("the other organization's log %+v", got)
	}
}

// senderSpec is a network account whose owner is verified or not.
func senderSpec(p string, verified bool) builtin.AccountSpec {
	s := accountSpec(p)
	s.Verified = verified
	return s
}

// Every bad filter is a 422 naming it, all at once.
func TestAuditLogValidation(t *testing.T) {
	t.Parallel()
	e := Start(t, Options{})
	org := e.Register(t)
	tests := []struct {
		query  string
		fields []string
	}{
		{"actor=0", []string{"actor"}},
		{"actor=07", []string{"actor"}},
		{"actor=%2B7", []string{"actor"}},
		{"actor=admin", []string{"actor"}},
		{"actor=network%00", []string{"actor"}},
		{"action=api_key.delete", []string{"action"}},
		{"action=member.add%1F", []string{"action"}},
		{"target=api_key", []string{"target"}},
		{"target=message:1", []string{"target"}},
		{"target=api_key:%2012", []string{"target"}},
		{"since=yesterday", []string{"since"}},
		{"until=2026-11-22", []string{"until"}},
		{"since=2026-11-22T10:00:00Z&until=2026-11-22T09:00:00Z", []string{"until"}},
		{"limit=101&cursor=x", []string{"limit", "cursor"}},
		{"actor=x&action=y&target=z&since=a&until=b", []string{"actor", "action", "target", "since", "until"}},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			t.Parallel()
			r := e.Do(Request{Method: http.MethodGet, Path: auditPath + "?" + tt.query, Header: org.Bearer()})
			wantFields(t, r, tt.fields...)
		})
	}
}
