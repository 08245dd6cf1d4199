package gate

import (
	"context"
	"sync"
	"time"
)

// teamCheck keeps the answer of a Gate's TeamWitness for a second, so
// that a resident gate under a burst of decisions asks the witnesses once.
type teamCheck struct {
	mu  sync.Mutex
	at  time.Time
	err error
}

// teamCheckFor is how long an answer stands.
const teamCheckFor = time.Second

func (c *teamCheck) check(ctx context.Context, f func(context.Context) error, now time.Time) error {
	if f == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.at.IsZero() && now.Sub(c.at) < teamCheckFor && now.Sub(c.at) >= 0 {
		return c.err
	}
	c.err, c.at = f(ctx), now
	return c.err
}
