package accesspages

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/bizmsg/platform/platform/apperr"
	"github.com/bizmsg/platform/platform/audit"
	"github.com/bizmsg/platform/web"
)

// auditFilterFields are the audit page's filters: the query parameters of
// GET /api/v1/central/audit-log, with the same names.
var auditFilterFields = []string{"actor", "action", "target", "since", "until", "limit"}

// auditView is an audit entry as the page shows it.
type auditView struct {
	audit.Entry
	// Who names the actor for people: the member's name, or what acted.
	Who string
	// What is the target for people: "API key 12".
	What string
	// Details are the entry's details as "name: value" lines, by name.
	Details []string
}

// auditOption is an entry of the page's actor or action menu.
type auditOption struct {
	Value, Label string
}

// auditData is the audit page's data.
type auditData struct {
	Entries []auditView
	Actors  []auditOption
	Actions []auditOption
	web.Pager
}

// auditPage is the organization's audit log, for owners and admins: the
// API's filters and cursor paging through the same service call
// (audit.Service.List).
func (d *Pages) auditPage(c *gin.Context) {
	s := web.SessionOf(c)
	if !s.IsAdmin() {
		d.Internal(c, apperr.Forbidden("insufficient_role", "Only owners and admins can read the audit log."))
		return
	}
	form, q := web.ReadFilters(c, auditFilterFields)
	apiQuery := audit.QueryFrom(q)
	apiQuery.Since, apiQuery.Until = web.RFC3339(apiQuery.Since), web.RFC3339(apiQuery.Until)
	apiQuery.Cursor = c.Query("cursor")
	data := auditData{Actors: auditActors(), Actions: auditActions()}
	pd := web.PageData{Title: "Audit log", Nav: "audit", Form: form}
	result, err := d.cfg.Audit.List(c.Request.Context(), s.Principal.OrgID, apiQuery)
	status, ok := d.FormStatus(c, err, &pd)
	if !ok {
		return
	}
	for _, e := range result.Items {
		data.Entries = append(data.Entries, viewEntry(e))
	}
	data.Pager = web.NewPager("/audit", q, apiQuery.Cursor, result.NextCursor, "")
	pd.Data = data
	d.RenderStatus(c, status, "audit", pd)
}

// auditActors are the actor menu's kinds of actor (a member is chosen by
// typing their id, which the entries show).
func auditActors() []auditOption {
	return []auditOption{
		{audit.ActorOperator, "The platform's operators"},
		{audit.ActorNetwork, "The messaging network"},
		{audit.ActorSystem, "The platform itself"},
	}
}

// auditActions are the action menu's families and actions.
func auditActions() []auditOption {
	out := []auditOption{
		{"api_key", "Any API key change"},
		{"member", "Any member change"},
		{"sender", "Any sender number change"},
	}
	for _, a := range audit.Actions {
		out = append(out, auditOption{a, a})
	}
	return out
}

// viewEntry words an entry for the page.
func viewEntry(e audit.Entry) auditView {
	v := auditView{Entry: e}
	switch e.Actor.Type {
	case audit.ActorUser:
		v.Who = e.Actor.Name
		if v.Who == "" {
			v.Who = "A former member"
		}
		if e.Actor.ID > 0 {
			v.Who += fmt.Sprintf(" (user %d)", e.Actor.ID)
		}
	case audit.ActorAPIKey:
		v.Who = fmt.Sprintf("API key %d", e.Actor.ID)
	case audit.ActorOperator:
		v.Who = "Platform operator"
	case audit.ActorNetwork:
		v.Who = "Messaging network"
	default:
		v.Who = "Platform"
	}
	switch e.Target.Type {
	case audit.TargetAPIKey:
		v.What = fmt.Sprintf("API key %d", e.Target.ID)
	case audit.TargetUser:
		v.What = fmt.Sprintf("Member %d", e.Target.ID)
	case audit.TargetSenderNumber:
		v.What = fmt.Sprintf("Sender number %d", e.Target.ID)
	}
	names := make([]string, 0, len(e.Details))
	for k := range e.Details {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, k := range names {
		val := e.Details[k]
		switch x := val.(type) {
		case nil:
			val = "none"
		case float64:
			if x == math.Trunc(x) && math.Abs(x) < 1e15 {
				val = strconv.FormatInt(int64(x), 10)
			}
		case []any:
			parts := make([]string, len(x))
			for i, p := range x {
				parts[i] = fmt.Sprint(p)
			}
			val = strings.Join(parts, ", ")
		}
		v.Details = append(v.Details, fmt.Sprintf("%s: %v", strings.ReplaceAll(k, "_", " "), val))
	}
	return v
}
