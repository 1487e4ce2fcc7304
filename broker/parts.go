package broker

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// lifecycle is the Start/Stop of one long-running part of the broker: its
// own context, cancelled by stop, and its own WaitGroup, so that each part
// can be stopped at its step of Broker.Close and no goroutine outlives its
// owner. Embedded by the parts (pullHolder, offsetCommitter, lockTable,
// delayScheduler, consumerManager, leaderLoop).
type lifecycle struct {
	mu     sync.Mutex
	cancel context.CancelFunc // nil while not running
	wg     sync.WaitGroup
}

// run starts each f on its own goroutine with the part's context. Starting
// a running part does nothing (it reports false).
func (l *lifecycle) run(fs ...func(ctx context.Context)) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cancel != nil {
		return false
	}
	ctx, cancel := context.WithCancel(context.Background())
	l.cancel = cancel
	l.wg.Add(len(fs))
	for _, f := range fs {
		go func() {
			defer l.wg.Done()
			f(ctx)
		}()
	}
	return true
}

// halt cancels the part's context and waits for its goroutines. Halting a
// part that is not running does nothing.
func (l *lifecycle) halt() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cancel == nil {
		return
	}
	l.cancel()
	l.wg.Wait()
	l.cancel = nil
}

// leaderLoop calls round every interval while this node is the writable
// leader and topic exists (any time when topic is ""): the shape of the
// broker's schedulers (delayed delivery, transaction check-back, the POP
// revive sweep). It owns its goroutine (Start, Stop).
type leaderLoop struct {
	lifecycle
	group groupView
	every time.Duration
	topic string
	round func(ctx context.Context)
}

// Start runs the loop until Stop.
func (l *leaderLoop) Start() { l.run(l.loop) }

// Stop ends the loop and waits for a round in progress.
func (l *leaderLoop) Stop() { l.halt() }

func (l *leaderLoop) loop(ctx context.Context) {
	tickEvery(ctx, l.every, func() {
		if !l.group.IsLeader() {
			return
		}
		if _, ok := l.group.Metadata().Topic(l.topic); l.topic != "" && !ok {
			return
		}
		l.round(ctx)
	})
}

// tickEvery calls f every d until ctx ends.
func tickEvery(ctx context.Context, d time.Duration, f func()) {
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			f()
		}
	}
}

// barrier waits until every entry proposed before it has been applied
// here (bounded by proposeTimeout); a node that cannot pass one is no
// writable leader.
func barrier(ctx context.Context, r Roles) error {
	ctx, cancel := context.WithTimeout(ctx, proposeTimeout)
	defer cancel()
	if err := r.Barrier(ctx); err != nil {
		return fmt.Errorf("%w: %w", ErrNoLeader, err)
	}
	return nil
}
