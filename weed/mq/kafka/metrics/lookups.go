package metrics

import (
	"context"
	"sync"
)

// Lookups runs look for each of n items, at most limit at once, until
// ctx ends (the items not begun by then are left out): what a scrape asks
// of many partitions, so that a slow one holds up only itself.
func Lookups(ctx context.Context, n, limit int, look func(i int)) {
	var wg sync.WaitGroup
	sem := make(chan struct{}, limit)
	for i := range n {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			look(i)
		}()
	}
	wg.Wait()
}
