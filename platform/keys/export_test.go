package keys

import (
	"context"
	"fmt"

	"github.com/bizmsg/platform/platform/apikey"
)

// AuthRun runs one authentication statement for plains together, as a run
// of the Service's finder does, and returns for each whether it wrote its
// key's last_used_at.
func (s *Service) AuthRun(ctx context.Context, plains []string) ([]bool, error) {
	items := make([]lookup, len(plains))
	for i, p := range plains {
		prefix, err := apikey.Parse(p)
		if err != nil {
			return nil, fmt.Errorf("key %d: %w", i, err)
		}
		items[i] = lookup{prefix: prefix, hash: s.cfg.Hasher.Hash(p)}
	}
	found, err := s.findKeys(ctx, struct{}{}, items)
	if err != nil {
		return nil, err
	}
	out := make([]bool, len(found))
	for i, k := range found {
		out[i] = k != nil && k.touched
	}
	return out, nil
}
