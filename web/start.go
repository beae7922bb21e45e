package web

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/bizmsg/platform/platform/page"
	"github.com/bizmsg/platform/platform/senders"
)

// startData is the first-send page's data.
type startData struct {
	BaseURL string
	// Sender is the number the example sends from (the oldest active one,
	// else the oldest); nil when the organization has none.
	Sender *senders.Sender
	Active bool
	HasKey bool
	// To and Content are the example's recipient ("" until given) and text.
	To, Content string
	// Export, Lookup and Send are the ready-to-paste commands.
	Export, Lookup, Send string
}

// recipientPlaceholder stands for the recipient in the commands until the
// page is given one: no made-up number, which the network would not know
// (the send would be refused, 422 recipient_unreachable).
const recipientPlaceholder = "RECIPIENT_PHONE"

// startPage shows the organization's first send as curl commands: the API
// key goes in an environment variable (never into the command or a URL),
// the sender is the organization's own, and the recipient and text can be
// filled in on the page.
func (d *Dashboard) startPage(c *gin.Context) {
	s := session(c)
	var list []senders.Sender
	hasKey, ok := d.loadWithKey(c, func(ctx context.Context) (err error) {
		list, err = d.cfg.Senders.List(ctx, s.Principal.Tenant)
		return err
	})
	if !ok {
		return
	}
	data := startData{
		BaseURL: baseURL(c, d.secure(c)),
		HasKey:  hasKey,
		To:      strings.TrimSpace(c.Query("to")),
		Content: strings.TrimSpace(c.Query("content")),
	}
	to := data.To
	if to == "" {
		to = recipientPlaceholder
	}
	if data.Content == "" {
		data.Content = "Hello from " + s.OrgName + "!"
	}
	// List is newest first: the oldest active number, else the oldest.
	slices.Reverse(list)
	for i := range list {
		if list[i].Status == senders.StatusActive {
			data.Sender, data.Active = &list[i], true
			break
		}
	}
	if data.Sender == nil && len(list) > 0 {
		data.Sender = &list[0]
	}
	senderID := "SENDER_NUMBER_ID"
	if data.Sender != nil {
		senderID = fmt.Sprint(data.Sender.ID)
	}
	data.Export = "export BIZMSG_API_KEY='paste your API key here'"
	data.Lookup = fmt.Sprintf("curl -sS -G %s \\\n  -H \"X-Api-Key: $BIZMSG_API_KEY\" \\\n  -H 'Accept: application/json' \\\n  --data-urlencode %s \\\n  --data-urlencode %s",
		shellQuote(data.BaseURL+"/api/v1/contacts/lookup"), shellQuote("phone="+to), shellQuote("sender_number_id="+senderID))
	body, err := json.Marshal(struct {
		SenderNumberID any    `json:"sender_number_id"`
		ToPhone        string `json:"to_phone"`
		Type           string `json:"type"`
		Content        string `json:"content"`
	}{jsonID(data.Sender), to, "text", data.Content})
	if err != nil {
		d.internal(c, err)
		return
	}
	data.Send = fmt.Sprintf("curl -sS -X POST %s \\\n  -H \"X-Api-Key: $BIZMSG_API_KEY\" \\\n  -H 'Accept: application/json' \\\n  -H 'Content-Type: application/json' \\\n  -d %s",
		shellQuote(data.BaseURL+"/api/v1/messages"), shellQuote(string(body)))
	d.renderStatus(c, http.StatusOK, "start", pageData{Title: "Your first send", Nav: "start", Data: data,
		Form: map[string]string{"to": data.To, "content": data.Content}})
}

// jsonID is the sender id of the example body: the number, or a
// placeholder string when the organization has no sender yet.
func jsonID(s *senders.Sender) any {
	if s == nil {
		return "SENDER_NUMBER_ID"
	}
	return s.ID
}

// baseURL is the address the browser reached the dashboard at, which is
// where the API is too.
func baseURL(c *gin.Context, secure bool) string {
	scheme := "http"
	if secure {
		scheme = "https"
	}
	return scheme + "://" + c.Request.Host
}

// shellQuote quotes s for a POSIX shell: in single quotes, with every
// single quote closed, escaped and reopened.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// loadWithKey runs load, a page's own read, then looks up whether the
// organization has created an API key (the onboarding steps of the
// overview and first-send pages). On the first error it renders the error
// page and reports false.
func (d *Dashboard) loadWithKey(c *gin.Context, load func(ctx context.Context) error) (hasKey, ok bool) {
	ctx := c.Request.Context()
	err := load(ctx)
	if err == nil {
		hasKey, err = d.hasKey(ctx, session(c).Principal.OrgID)
	}
	if err != nil {
		d.internal(c, err)
		return false, false
	}
	return hasKey, true
}

// hasKey reports whether the organization has created an API key.
func (d *Dashboard) hasKey(ctx context.Context, orgID int64) (bool, error) {
	ks, _, err := d.cfg.Keys.List(ctx, orgID, page.Query{Limit: 1})
	return len(ks) > 0, err
}
