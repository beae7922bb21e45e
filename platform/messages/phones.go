package messages

import (
	"sync"

	"github.com/bizmsg/platform/platform/db"
)

// phoneCache remembers the phones of sender ids this process has sent from,
// so that a send naming its sender by id can start the recipient lookup
// without reading the sender first. A sender number's phone never changes
// and ids are never reused, so an entry is never stale: at worst it names a
// sender deleted since, which the acceptance statement then does not find.
// It holds at most max entries; when full it starts again empty (the working
// set of a busy process is its active senders, far fewer).
type phoneCache struct {
	max int

	mu     sync.RWMutex
	phones map[phoneKey]string
}

type phoneKey struct {
	org int64
	id  int64
}

func newPhoneCache(max int) *phoneCache {
	return &phoneCache{max: max, phones: make(map[phoneKey]string)}
}

func (c *phoneCache) get(t db.Tenant, id int64) (string, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	p, ok := c.phones[phoneKey{t.OrgID, id}]
	return p, ok
}

func (c *phoneCache) put(t db.Tenant, id int64, phone string) {
	k := phoneKey{t.OrgID, id}
	c.mu.RLock()
	known := c.phones[k] == phone
	c.mu.RUnlock()
	if known {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.phones) >= c.max {
		c.phones = make(map[phoneKey]string)
	}
	c.phones[k] = phone
}
