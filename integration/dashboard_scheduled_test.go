package integration

import (
	"fmt"
	"net/http"
	"net/url"
	"testing"
	"time"
)

// The dashboard's message page shows a scheduled message's time and offers
// Cancel while it is scheduled; the history filters scheduled and canceled
// messages; a second cancel is the error page's 409.
func TestDashboardCancelScheduled(t *testing.T) {
	t.Parallel()
	e := startMsg(t, Options{})
	org := e.Register(t)
	sid := e.activeSender(org, phoneN(1))
	m := e.mustSchedule(org, scheduled(sid, phoneN(2), "Dinner at 8", e.Clock.Now().Add(time.Hour).Truncate(time.Second)))
	page := fmt.Sprintf("/messages/%d", m.ID)

	w := newWebClient(t, e.Env)
	wantPage(t, w.login(org.OwnerEmail, org.OwnerPassword), http.StatusSeeOther)
	wantPage(t, w.get(page), http.StatusOK, `id="message-send-at"`, `id="cancel-message"`, "scheduled")
	wantPage(t, w.get("/messages?status=scheduled"), http.StatusOK, "Dinner at 8", `scheduled</option>`)
	token := w.csrf(page)
	wantPage(t, w.post(page+"/cancel", url.Values{"csrf_token": {token}}), http.StatusSeeOther)
	after := w.get(page + "?ok=message_canceled")
	wantPage(t, after, http.StatusOK, "Scheduled message canceled", "canceled")
	if got := e.getScheduled(org, m.ID); got.Status != "canceled" || got.CanceledAt == nil {
		t.Fatalf("message after the dashboard's cancel: %+v", got)
	}
	wantPage(t, w.get("/messages?status=canceled"), http.StatusOK, "Dinner at 8")
	wantPage(t, w.post(page+"/cancel", url.Values{"csrf_token": {token}}), http.StatusConflict, "Only a scheduled message can be canceled")
	wantPage(t, w.post(page+"/cancel", url.Values{}), http.StatusForbidden)
}
