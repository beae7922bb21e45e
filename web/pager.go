package web

import (
	"net/url"
	"strings"

	"github.com/gin-gonic/gin"
)

// Pager is the paging of a filtered, cursor-paged list (the message
// history, the audit log, an endpoint's delivery log), which the page's
// "pager" template links.
type Pager struct {
	// NextURL fetches the next page with the same filters; "" on the last
	// page. FirstURL goes back to the first page when not on it.
	NextURL, FirstURL string
	// Filtered: the list is filtered.
	Filtered bool
}

// pager is the core's own name of Pager.
type pager = Pager

// newPager returns the paging of the list at path filtered by q and shown
// from cursor ("" on the first page), whose next page starts at next (""
// on the last page). fragment, "" or "#id", ends both links.
func newPager(path string, q url.Values, cursor, next, fragment string) pager {
	p := pager{Filtered: len(q) > 0}
	if next != "" {
		v := cloneValues(q)
		v.Set("cursor", next)
		p.NextURL = path + "?" + v.Encode() + fragment
	}
	if cursor != "" {
		p.FirstURL = path
		if len(q) > 0 {
			p.FirstURL += "?" + q.Encode()
		}
		p.FirstURL += fragment
	}
	return p
}

// readFilters reads the request's filters named by fields, trimmed, leaving
// out the empty ones: as the values to put back into the filter form, and
// as the query of the list.
func readFilters(c *gin.Context, fields []string) (map[string]string, url.Values) {
	form := map[string]string{}
	q := url.Values{}
	for _, f := range fields {
		v := strings.TrimSpace(c.Query(f))
		if v == "" {
			continue
		}
		form[f] = v
		q.Set(f, v)
	}
	return form, q
}

func cloneValues(v url.Values) url.Values {
	out := make(url.Values, len(v))
	for k, vs := range v {
		out[k] = append([]string(nil), vs...)
	}
	return out
}
