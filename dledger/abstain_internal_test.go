package dledger

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

func TestMayHaveLost(t *testing.T) {
	for _, tc := range []struct {
		name string
		prev bootRecord
		ok   bool
		boot string
		want bool
	}{
		{"no record", bootRecord{}, false, "b2", false},
		{"unclean, unsynced, new boot", bootRecord{BootID: "b1", Unsynced: true}, true, "b2", true},
		{"unclean, unsynced, same boot", bootRecord{BootID: "b1", Unsynced: true}, true, "b1", false},
		{"clean, unsynced, new boot", bootRecord{BootID: "b1", Unsynced: true, Clean: true}, true, "b2", false},
		{"unclean, synced, new boot", bootRecord{BootID: "b1"}, true, "b2", false},
		{"unclean, unsynced, unknown boot", bootRecord{BootID: "", Unsynced: true}, true, "", true},
		{"still recovering, same boot", bootRecord{BootID: "b1", Recovering: true}, true, "b1", true},
		{"still recovering, clean", bootRecord{BootID: "b1", Clean: true, Recovering: true}, true, "b1", true},
	} {
		if got := mayHaveLost(tc.prev, tc.ok, tc.boot); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// The gate refuses votes, pre-votes and hand-overs while the node
// abstains, fails its own vote requests, and passes everything else; once
// lifted it passes votes too.
func TestVoteGate(t *testing.T) {
	_, a := raft.NewInmemTransport("a")
	_, b := raft.NewInmemTransport("b")
	a.Connect("b", b)
	b.Connect("a", a)
	var abstaining atomic.Bool
	abstaining.Store(true)
	gate := newVoteGate(b, "b", &abstaining)
	defer gate.Close()

	var vr raft.RequestVoteResponse
	if err := a.RequestVote("b", "b", &raft.RequestVoteRequest{Term: 7}, &vr); err != nil || vr.Granted || vr.Term != 7 {
		t.Fatalf("vote while abstaining: %+v, %v", vr, err)
	}
	var pr raft.RequestPreVoteResponse
	if err := a.RequestPreVote("b", "b", &raft.RequestPreVoteRequest{Term: 8}, &pr); err != nil || pr.Granted || pr.Term != 8 {
		t.Fatalf("pre-vote while abstaining: %+v, %v", pr, err)
	}
	var tr raft.TimeoutNowResponse
	if err := a.TimeoutNow("b", "b", &raft.TimeoutNowRequest{}, &tr); err == nil {
		t.Fatal("a hand-over to an abstaining node was taken")
	}
	if got := gate.refused.Load(); got != 3 {
		t.Fatalf("%d refused, want 3", got)
	}
	if err := gate.RequestVote("a", "a", &raft.RequestVoteRequest{}, &vr); !errors.Is(err, errAbstaining) {
		t.Fatalf("own vote request while abstaining: %v", err)
	}
	if err := gate.RequestPreVote("a", "a", &raft.RequestPreVoteRequest{}, &pr); !errors.Is(err, errAbstaining) {
		t.Fatalf("own pre-vote request while abstaining: %v", err)
	}

	// Replication passes through to raft's consumer.
	answer := func(want any) {
		select {
		case rpc := <-gate.Consumer():
			switch rpc.Command.(type) {
			case *raft.AppendEntriesRequest:
				rpc.Respond(&raft.AppendEntriesResponse{Success: true}, nil)
			case *raft.RequestVoteRequest:
				rpc.Respond(&raft.RequestVoteResponse{Granted: true}, nil)
			default:
				t.Errorf("unexpected %T", rpc.Command)
			}
		case <-time.After(10 * time.Second):
			t.Errorf("no %T reached raft", want)
		}
	}
	done := make(chan error, 1)
	var ar raft.AppendEntriesResponse
	go func() { done <- a.AppendEntries("b", "b", &raft.AppendEntriesRequest{Term: 7}, &ar) }()
	answer(&raft.AppendEntriesRequest{})
	if err := <-done; err != nil || !ar.Success {
		t.Fatalf("append entries through the gate: %+v, %v", ar, err)
	}

	abstaining.Store(false)
	go func() { done <- a.RequestVote("b", "b", &raft.RequestVoteRequest{Term: 9}, &vr) }()
	answer(&raft.RequestVoteRequest{})
	if err := <-done; err != nil || !vr.Granted {
		t.Fatalf("vote after the gate lifted: %+v, %v", vr, err)
	}
}
