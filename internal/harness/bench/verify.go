package bench

import (
	"context"
	"fmt"
	"sync"
)

// Sent is one send kept for verification (ProduceConfig.Keep): its key
// (KeyOf: producer and sequence number), its outcome and, once
// acknowledged, where it was stored.
type Sent struct {
	Key     string
	Outcome Outcome
	// MaybeDuplicated: an earlier attempt of this send had an unknown
	// outcome, so it may be stored more than once.
	MaybeDuplicated bool
	// Broker and OffsetMsgID say where an acknowledged send was stored.
	Broker      string
	OffsetMsgID string
}

// KeyOf is the KEYS property of send seq of producer p when sends are
// kept: unique in a run, so a lookup by key finds every stored copy.
func KeyOf(runID string, p uint32, seq uint64) string { return fmt.Sprintf("%s-%d-%d", runID, p, seq) }

// Store is what Verify reads a cluster through.
type Store interface {
	// ByOffset returns the key of the message stored at offsetMsgID on
	// broker group broker (an error when there is none).
	ByOffset(ctx context.Context, broker, offsetMsgID string) (key string, err error)
	// CountByKey returns how many stored messages of topic carry key.
	CountByKey(ctx context.Context, topic, key string) (int, error)
}

// Verification is what Verify found.
type Verification struct {
	// Lost: acknowledged sends that cannot be read back.
	Lost int64 `json:"lost"`
	// Duplicates: extra stored copies of sends that may have been stored
	// twice (an unknown outcome on some attempt), beyond the first.
	Duplicates int64 `json:"duplicates"`
	// UnknownStored: sends whose final outcome was unknown but that were
	// stored.
	UnknownStored int64 `json:"unknown_stored"`
	// FailedStored: sends reported as certainly not stored that were
	// stored after all: a client or broker bug.
	FailedStored int64 `json:"failed_stored"`
	// Errors: the first few lookups that failed for a reason other than
	// "not there", which leave the figures above incomplete.
	Errors []string `json:"errors,omitempty"`
	// Refused: lookups a broker refused with NO_PERMISSION (its ACL is
	// on: the run's credentials are missing or may not read the topic).
	Refused int64 `json:"refused,omitempty"`
}

// Verify reads back every acknowledged send by its offset (Lost) and
// counts the stored copies of every send that failed or whose outcome was,
// or might have been, unknown (Duplicates, UnknownStored, FailedStored). It uses up to 8 lookups at a time.
func Verify(ctx context.Context, topic string, sent []Sent, st Store) Verification {
	var (
		mu  sync.Mutex
		v   Verification
		wg  sync.WaitGroup
		sem = make(chan struct{}, 8)
	)
	fail := func(err error) {
		if _, ok := refusal(err); ok {
			v.Refused++
		}
		if len(v.Errors) < 5 {
			v.Errors = append(v.Errors, err.Error())
		}
	}
	for _, s := range sent {
		if ctx.Err() != nil {
			mu.Lock()
			fail(ctx.Err())
			mu.Unlock()
			break
		}
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			if s.Outcome == OK {
				key, err := st.ByOffset(ctx, s.Broker, s.OffsetMsgID)
				if err != nil || key != s.Key {
					mu.Lock()
					v.Lost++
					if err != nil {
						fail(fmt.Errorf("%s at %s: %w", s.Key, s.OffsetMsgID, err))
					} else {
						fail(fmt.Errorf("%s: offset %s holds %q", s.Key, s.OffsetMsgID, key))
					}
					mu.Unlock()
					return
				}
			}
			if s.Outcome == OK && !s.MaybeDuplicated {
				return
			}
			n, err := st.CountByKey(ctx, topic, s.Key)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil:
				fail(fmt.Errorf("count %s: %w", s.Key, err))
			case s.Outcome == Failed && n > 0:
				v.FailedStored++
				v.Duplicates += int64(n - 1)
			case s.Outcome == Unknown && n > 0:
				v.UnknownStored++
				v.Duplicates += int64(n - 1)
			case s.Outcome == OK && n > 1:
				v.Duplicates += int64(n - 1)
			}
		}()
	}
	wg.Wait()
	return v
}
