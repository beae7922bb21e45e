package web

import (
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/gin-gonic/gin"

	"github.com/bizmsg/platform/platform/apperr"
	"github.com/bizmsg/platform/platform/messages"
	"github.com/bizmsg/platform/platform/senders"
)

// filterFields are the history's filters: the Tenant API's query parameters
// of GET /messages, with the same names.
var filterFields = []string{"direction", "sender_number_id", "to_phone", "status", "type", "since", "until",
	"client_reference", "conversation_id", "campaign_id", "limit"}

// messageView is a message as the history shows it.
type messageView struct {
	messages.Message
	// SenderPhone is the phone of the organization's number
	// (SenderNumberID), "" when unknown.
	SenderPhone string
	// Excerpt is the content, shortened.
	Excerpt string
	// CanCancel offers the Cancel button of a scheduled message.
	CanCancel bool
}

// Inbound reports whether the message was written to the organization.
func (m messageView) Inbound() bool { return m.Direction == messages.DirectionInbound }

// From is who wrote the message: the organization's number (outbound) or
// the contact (inbound).
func (m messageView) From() string {
	if m.Inbound() {
		if m.FromPhone != nil {
			return *m.FromPhone
		}
		return ""
	}
	return m.SenderPhone
}

// Contact is the phone on the other side of the organization's number.
func (m messageView) Contact() string {
	if m.Inbound() {
		return m.From()
	}
	return m.ToPhone
}

// messagesData is the history page's data.
type messagesData struct {
	Messages   []messageView
	Senders    []senders.Sender
	Statuses   []string
	Types      []string
	Directions []string
	pager
}

// maxExcerpt is how much of a message's content the history shows.
const maxExcerpt = 80

// messagesPage is the message history: the API's filters and cursor
// paging, through the same service call (messages.Service.List).
func (d *Dashboard) messagesPage(c *gin.Context) {
	s := session(c)
	ctx := c.Request.Context()
	form, q := readFilters(c, filterFields)
	list, err := d.cfg.Senders.List(ctx, s.Principal.Tenant)
	if err != nil {
		d.internal(c, err)
		return
	}
	phones := phonesByID(list)
	data := messagesData{
		Senders:    list,
		Statuses:   messages.Statuses(),
		Types:      []string{messages.TypeText, messages.TypeImage, messages.TypeVoice, messages.TypeDocument},
		Directions: []string{messages.DirectionOutbound, messages.DirectionInbound},
	}
	apiQuery := messages.ListQueryFrom(q)
	apiQuery.Since, apiQuery.Until = rfc3339(apiQuery.Since), rfc3339(apiQuery.Until)
	apiQuery.Cursor = c.Query("cursor")
	page := pageData{Title: "Messages", Nav: "messages", Form: form}
	result, err := d.cfg.Messages.List(ctx, s.Principal.Tenant, apiQuery)
	status, ok := d.formStatus(c, err, &page)
	if !ok {
		return
	}
	for _, m := range result.Items {
		data.Messages = append(data.Messages, messageView{Message: m, SenderPhone: phones[m.SenderNumberID], Excerpt: excerpt(m.Content)})
	}
	data.pager = newPager("/messages", q, apiQuery.Cursor, result.NextCursor, "")
	page.Data = data
	d.renderStatus(c, status, "messages", page)
}

// rfc3339 completes a datetime-local value ("2026-11-22T14:03", read as
// UTC) to the RFC 3339 form the API takes; other values pass unchanged for
// the service to judge.
func rfc3339(v string) string {
	switch {
	case len(v) == len("2006-01-02T15:04") && strings.Count(v, ":") == 1:
		return v + ":00Z"
	case len(v) == len("2006-01-02T15:04:05") && strings.Count(v, ":") == 2:
		return v + "Z"
	}
	return v
}

func excerpt(s string) string {
	if utf8.RuneCountInString(s) <= maxExcerpt {
		return s
	}
	r := []rune(s)
	return string(r[:maxExcerpt-1]) + "…"
}

// messagePage is one message with its delivery: the state of its delivery
// job, the attempts made, the last failure in plain words and the next
// attempt (messages.Service.Get, as GET /api/v1/messages/{id} shows it).
func (d *Dashboard) messagePage(c *gin.Context) {
	s := session(c)
	id, ok := d.pathID(c, "message")
	if !ok {
		return
	}
	m, err := d.cfg.Messages.Get(c.Request.Context(), s.Principal.Tenant, id)
	if err != nil {
		d.internal(c, err)
		return
	}
	view := messageView{Message: m, CanCancel: m.Status == messages.StatusScheduled && d.cfg.Scheduled != nil}
	if sn, err := d.cfg.Senders.Get(c.Request.Context(), s.Principal.Tenant, m.SenderNumberID); err == nil {
		view.SenderPhone = sn.Phone
	}
	d.render(c, "message", pageData{Title: "Message " + strconv.FormatInt(m.ID, 10), Nav: "messages", Data: view,
		Notice: notice(c)})
}

// conversationData is the conversation page's data.
type conversationData struct {
	ID int64
	// Messages are the page's messages, oldest first (a thread).
	Messages []messageView
	// Contact and SenderPhone are the two sides: the contact's phone and
	// the organization's number.
	Contact, SenderPhone string
	// OlderURL fetches the messages before this page's; "" at the start
	// of the conversation. LatestURL goes back to the newest page when not
	// on it.
	OlderURL, LatestURL string
}

// conversationPageSize is how many messages the conversation page shows at
// once (the history's largest page).
const conversationPageSize = messages.MaxPageLimit

// conversationPage is one conversation (the network's conversation of an
// organization's number and a contact) as a thread: its messages both
// ways, oldest first, the contact's on the left and the organization's on
// the right, each with its time and status and a link to the message. It
// reads the history with its conversation_id filter (messages.Service.List),
// the newest page first; a conversation with no message of the
// organization is 404.
func (d *Dashboard) conversationPage(c *gin.Context) {
	s := session(c)
	ctx := c.Request.Context()
	id, ok := d.pathID(c, "conversation")
	if !ok {
		return
	}
	cursor := c.Query("cursor")
	page, err := d.cfg.Messages.List(ctx, s.Principal.Tenant, messages.ListQuery{
		ConversationID: strconv.FormatInt(id, 10), Limit: strconv.Itoa(conversationPageSize), Cursor: cursor})
	if err != nil {
		if e, isApp := apperr.As(err); isApp && e.Kind == apperr.KindInvalid {
			err = apperr.NotFound("conversation")
		}
		d.internal(c, err)
		return
	}
	if len(page.Items) == 0 {
		d.internal(c, apperr.NotFound("conversation"))
		return
	}
	data := conversationData{ID: id, Contact: messageView{Message: page.Items[0]}.Contact()}
	if sn, err := d.cfg.Senders.Get(ctx, s.Principal.Tenant, page.Items[0].SenderNumberID); err == nil {
		data.SenderPhone = sn.Phone
	}
	for i := len(page.Items) - 1; i >= 0; i-- {
		data.Messages = append(data.Messages, messageView{Message: page.Items[i], SenderPhone: data.SenderPhone,
			Excerpt: page.Items[i].Content})
	}
	base := "/conversations/" + strconv.FormatInt(id, 10)
	if page.NextCursor != "" {
		data.OlderURL = base + "?" + url.Values{"cursor": {page.NextCursor}}.Encode()
	}
	if cursor != "" {
		data.LatestURL = base
	}
	title := "Conversation"
	if data.Contact != "" {
		title = "Conversation with " + data.Contact
	}
	d.render(c, "conversation", pageData{Title: title, Nav: "messages", Data: data})
}

// cancelMessage cancels a scheduled message (the message page's Cancel
// button) and shows the message again; a message no longer scheduled is
// the error page's 409 not_cancelable.
func (d *Dashboard) cancelMessage(c *gin.Context) {
	s := session(c)
	id, ok := d.pathID(c, "message")
	if !ok {
		return
	}
	if d.cfg.Scheduled == nil {
		d.internal(c, apperr.NotFound("page"))
		return
	}
	if _, err := d.cfg.Scheduled.Cancel(c.Request.Context(), s.Principal.Tenant, id); err != nil {
		d.internal(c, err)
		return
	}
	redirect(c, "/messages/"+strconv.FormatInt(id, 10)+"?ok=message_canceled")
}
