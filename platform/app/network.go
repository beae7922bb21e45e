package app

import (
	"fmt"

	"github.com/bizmsg/platform/platform/network"
	"github.com/bizmsg/platform/platform/network/builtin"
)

// newNetwork returns the messaging network the configuration names (NETWORK):
// the built-in network in this database, on the app's clock so delivery times
// agree with the rest of the platform.
func (a *App) newNetwork() (network.Network, error) {
	switch a.cfg.Network {
	case "builtin":
		return builtin.New(a.DB, builtin.Config{Clock: a.clock}), nil
	default:
		return nil, fmt.Errorf("NETWORK=%s: no adapter for this network is built in", a.cfg.Network)
	}
}
