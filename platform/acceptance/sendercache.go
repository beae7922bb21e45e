package acceptance

import (
	"sync"

	"github.com/bizmsg/platform/platform/db"
)

// senderCache remembers, per sender number this process has used, what lets
// the hot paths start without reading the sender first:
//
//   - its phone, for the send path's recipient lookup. A sender number's
//     phone never changes and ids are never reused, so this is never stale:
//     at worst it names a sender deleted since, which the acceptance
//     statement then does not find.
//
// It holds at most max senders; when full it starts again empty (the working
// set of a busy process is its active senders, far fewer).
type senderCache struct {
	max int

	mu      sync.RWMutex
	senders map[senderKey]senderFacts
}

type senderKey struct {
	org int64
	id  int64
}

type senderFacts struct {
	phone string
}

func newSenderCache(limit int) *senderCache {
	return &senderCache{max: limit, senders: make(map[senderKey]senderFacts)}
}

func (c *senderCache) get(t db.Tenant, id int64) senderFacts {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.senders[senderKey{t.OrgID, id}]
}

// phone returns the sender's phone, if known.
func (c *senderCache) phone(t db.Tenant, id int64) (string, bool) {
	f := c.get(t, id)
	return f.phone, f.phone != ""
}

func (c *senderCache) putPhone(t db.Tenant, id int64, phone string) {
	c.update(t, id, func(f *senderFacts) bool {
		if f.phone == phone {
			return false
		}
		f.phone = phone
		return true
	})
}

// update applies change to the sender's entry, taking the write lock only
// when change reports that something differs from what is remembered.
func (c *senderCache) update(t db.Tenant, id int64, change func(*senderFacts) bool) {
	k := senderKey{t.OrgID, id}
	c.mu.RLock()
	f := c.senders[k]
	c.mu.RUnlock()
	if !change(&f) {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.senders) >= c.max {
		c.senders = make(map[senderKey]senderFacts)
	}
	cur := c.senders[k]
	change(&cur)
	c.senders[k] = cur
}
