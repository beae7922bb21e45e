package accounts

import (
	"time"

	"github.com/bizmsg/platform/platform/db"
)

// Organization is an organization as both APIs render it in /me.
type Organization struct {
	ID                 int64     `json:"id"`
	Name               string    `json:"name"`
	SubscriptionStatus string    `json:"subscription_status"`
	DefaultDailyLimit  int       `json:"default_daily_limit"`
	CreatedAt          time.Time `json:"created_at"`
	// Tenant routes the organization's queries to its schema.
	Tenant db.Tenant `json:"-"`
	// APIRateLimit and APIRateBurst are the organization's own Tenant API
	// rate limit per key (requests/s, burst); nil: the platform default.
	APIRateLimit *float64 `json:"-"`
	APIRateBurst *int     `json:"-"`
}

// User is a member of an organization as both APIs render it.
type User struct {
	ID        int64     `json:"id"`
	Name      string    `json:"name"`
	Email     string    `json:"email"`
	Role      string    `json:"role"`
	CreatedAt time.Time `json:"created_at"`
}

// Subscription is the organization's subscription as /me renders it.
type Subscription struct {
	Status string `json:"status"`
}

// Subscription returns the organization's subscription view.
func (o Organization) Subscription() Subscription {
	return Subscription{Status: o.SubscriptionStatus}
}
