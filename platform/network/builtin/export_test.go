package builtin

// LookupsWaiting is how many lookups wait for the network's next read.
func (n *Network) LookupsWaiting() int { return n.lookups.Waiting(struct{}{}) }

// DeliveriesWaiting is how many deliveries wait for the network's next
// shared run.
func (n *Network) DeliveriesWaiting() int { return n.deliveries.Waiting(struct{}{}) }
