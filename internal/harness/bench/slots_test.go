package bench

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ledgermq/ledgermq/client"
	"github.com/ledgermq/ledgermq/internal/testwait"
)

// funcSender is fakeSender with SendFunc: each send's outcome reaches its
// callback on a goroutine of its own, as a connection's reader would call
// it. Sends with hold set wait until their context ends.
type funcSender struct {
	*fakeSender
	hold     bool
	funcs    atomic.Int64 // SendFunc calls
	inFlight sync.WaitGroup
}

func (f *funcSender) SendFunc(ctx context.Context, m *client.Message, fn func(client.SendResult, error)) error {
	if _, _, ok := DecodeHeader(m.Body); !ok {
		return errors.New("no bench header")
	}
	f.funcs.Add(1)
	f.inFlight.Add(1)
	go func() {
		defer f.inFlight.Done()
		if f.hold {
			<-ctx.Done()
			fn(client.SendResult{}, &client.SendError{Topic: m.Topic, Outcome: client.OutcomeUnknown, Err: ctx.Err()})
			return
		}
		fn(f.Send(ctx, m))
	}()
	return nil
}

// TestProduceSlots: a closed-loop run over FuncSenders makes every send
// through SendFunc, counts and keeps them as the Send workers do (the
// verification finds them all), and ends with the duration; an open-loop
// run uses Send.
func TestProduceSlots(t *testing.T) {
	f := &funcSender{fakeSender: newFakeSender(true)}
	res, err := Produce(context.Background(), ProduceConfig{
		Topic: "T", Producers: 3, Inflight: 4, Size: 64, Count: 1000, Keep: true, RunID: "r1",
		NewSender: func(int) (Sender, error) { return f, nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	f.inFlight.Wait()
	s := res.Summary
	if s.Sent != 1000 || s.Failed != 200 || s.Acked+s.Unknown != 800 || s.Unknown == 0 || f.funcs.Load() != 1000 {
		t.Fatalf("summary %+v after %d SendFunc calls", s, f.funcs.Load())
	}
	if len(res.Sent) != 1000 || !f.closed.Load() {
		t.Fatalf("kept %d sends, closed %v", len(res.Sent), f.closed.Load())
	}
	v := Verify(context.Background(), "T", res.Sent, f)
	if v.Lost != 0 || v.Duplicates != 0 || v.UnknownStored != s.Unknown || v.FailedStored != 0 || len(v.Errors) != 0 {
		t.Fatalf("verification %+v (unknown %d)", v, s.Unknown)
	}
	if n := res.Errors["refused: "+client.ErrSendFailed.Error()]; n != 200 {
		t.Fatalf("errors %v", res.Errors)
	}

	d := &funcSender{fakeSender: newFakeSender(false)}
	res, err = Produce(context.Background(), ProduceConfig{
		Topic: "T", Producers: 2, Inflight: 2, Size: 100, Duration: 20 * time.Millisecond,
		NewSender: func(int) (Sender, error) { return d, nil },
	})
	d.inFlight.Wait()
	if err != nil || res.Summary.Acked == 0 || res.Summary.Acked != res.Summary.Sent || d.funcs.Load() != res.Summary.Sent {
		t.Fatalf("duration run: %+v %v, %d SendFunc calls", res.Summary, err, d.funcs.Load())
	}

	o := &funcSender{fakeSender: newFakeSender(false)}
	res, err = Produce(context.Background(), ProduceConfig{
		Topic: "T", Producers: 1, Inflight: 2, Size: HeaderLen, Count: 20, Rate: 1000,
		NewSender: func(int) (Sender, error) { return o, nil },
	})
	if err != nil || res.Summary.Acked != 20 || o.funcs.Load() != 0 {
		t.Fatalf("open loop: %+v %v, %d SendFunc calls", res.Summary, err, o.funcs.Load())
	}
}

// TestProduceSlotsCancelled: cancelling the run's context ends the sends
// in flight through SendFunc, counted unknown, and the run with them.
func TestProduceSlotsCancelled(t *testing.T) {
	f := &funcSender{fakeSender: newFakeSender(false), hold: true}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan Result, 1)
	go func() {
		res, err := Produce(ctx, ProduceConfig{
			Topic: "T", Producers: 2, Inflight: 3, Size: 64, Duration: time.Hour,
			NewSender: func(int) (Sender, error) { return f, nil },
		})
		if err != nil {
			t.Error(err)
		}
		done <- res
	}()
	testwait.For(t, 10*time.Second, "six sends in flight", func() bool { return f.funcs.Load() == 6 })
	cancel()
	var res Result
	select {
	case res = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the run did not end with its context")
	}
	f.inFlight.Wait()
	if s := res.Summary; s.Sent != 6 || s.Unknown != 6 {
		t.Fatalf("summary %+v", s)
	}
}
