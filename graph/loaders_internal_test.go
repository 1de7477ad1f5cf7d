package graph

import (
	"context"
	"sync"
	"testing"
)

// A response's loaders are made on first use, once: fields resolved concurrently share them
// (or a batch would split), and a response that never loads anything never makes them.
func TestResponseLoadersMadeOnFirstUseOnce(t *testing.T) {
	t.Parallel()
	r := &Resolver{}
	ctx := withLoaders(context.Background(), nil, defaultBatchWait)
	rl := ctx.Value(loadersKey{}).(*responseLoaders)
	if rl.l != nil {
		t.Fatal("loaders made before any resolver asked for them")
	}

	const n = 16
	got := make([]*loaders, n)
	var wg sync.WaitGroup
	for i := range got {
		wg.Go(func() { got[i] = r.loaders(ctx) })
	}
	wg.Wait()
	for i, l := range got {
		if l == nil || l != got[0] {
			t.Fatalf("resolver %d got loaders %p, resolver 0 got %p: one response must share one set", i, l, got[0])
		}
	}
	if rl.l != got[0] {
		t.Fatal("the response's loaders are not the ones its resolvers got")
	}

	// Another response (the next event of a subscription) gets loaders of its own: a
	// loader's cache must not serve one event's reads to the next.
	if other := r.loaders(withLoaders(context.Background(), nil, defaultBatchWait)); other == got[0] {
		t.Fatal("two responses share loaders")
	}
}
