package messages

import (
	"sync"

	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/throttle"
)

// senderCache remembers, per sender number this process has used, what lets
// the hot paths start without reading the sender first:
//
//   - its phone, for the send path's recipient lookup. A sender number's
//     phone never changes and ids are never reused, so this is never stale:
//     at worst it names a sender deleted since, which the acceptance
//     statement then does not find;
//   - its throttle limit as the last delivery read it (the organization's
//     rate and burst, else the configured default), so that a delivery can
//     take its token before its one statement. A changed rate reaches a
//     sender's bucket with the delivery after the first one that reads it.
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
	limit throttle.Limit // zero until a delivery has read it
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

// limit returns the sender's throttle limit as last read, if any.
func (c *senderCache) limit(t db.Tenant, id int64) (throttle.Limit, bool) {
	f := c.get(t, id)
	return f.limit, f.limit != throttle.Limit{}
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

func (c *senderCache) putLimit(t db.Tenant, id int64, l throttle.Limit) {
	c.update(t, id, func(f *senderFacts) bool {
		if f.limit == l {
			return false
		}
		f.limit = l
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
