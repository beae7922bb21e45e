package app

import (
	"fmt"

	"github.com/bizmsg/platform/platform/network"
	"github.com/bizmsg/platform/platform/network/builtin"
	"github.com/bizmsg/platform/platform/network/httpnet"
)

// newNetwork returns the messaging network the configuration names (NETWORK):
// the built-in network in this database, on the app's clock so delivery times
// agree with the rest of the platform; or the external network at NETWORK_URL
// over HTTP, requests signed with NETWORK_SECRET, each attempt bounded by
// NETWORK_TIMEOUT. Signatures are stamped with the wall clock, not the app's
// clock: they must agree with the network's.
func (a *App) newNetwork() (network.Network, error) {
	switch a.cfg.Network {
	case "builtin":
		n, err := builtin.New(builtin.Config{DB: a.DB, Clock: a.clock, Batch: a.batches("lookup"),
			DeliverBatch: a.batches("network")})
		if err != nil {
			return nil, fmt.Errorf("NETWORK=builtin: %w", err)
		}
		return n, nil
	case "http":
		c, err := httpnet.New(httpnet.Config{
			BaseURL: a.cfg.NetworkURL,
			Secret:  a.cfg.NetworkSecret,
			Timeout: a.cfg.NetworkTimeout,
		})
		if err != nil {
			return nil, fmt.Errorf("NETWORK=http: %w", err)
		}
		return c, nil
	default:
		return nil, fmt.Errorf("NETWORK=%s: no adapter for this network is built in", a.cfg.Network)
	}
}
