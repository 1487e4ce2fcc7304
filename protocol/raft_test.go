package protocol

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/ledgermq/ledgermq/remoting"
)

func TestRaftStatusRoundTrip(t *testing.T) {
	s := RaftStatus{Group: "broker-a", Node: "n1", Role: "follower", Term: 7, Leader: "n0", LeaderAddr: "127.0.0.1:10911",
		LastIndex: 42, CommitIndex: 41, AppliedIndex: 40, StoreSeq: 39,
		Members: []RaftMember{{ID: "n0", RaftAddr: "127.0.0.1:10912", ClientAddr: "127.0.0.1:10911", Voter: true},
			{ID: "n1", RaftAddr: "127.0.0.1:10922", Voter: false}}}
	body, err := s.Encode()
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeRaftStatus(body)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, s) {
		t.Fatalf("round trip: %+v, want %+v", got, s)
	}
	if m, ok := got.Member("n1"); !ok || m.Voter {
		t.Fatalf("Member(n1) = %+v %v", m, ok)
	}
	if _, ok := got.Member("n9"); ok {
		t.Fatal("Member found an unknown id")
	}
	many := RaftStatus{}
	for range MaxRaftMembers + 1 {
		many.Members = append(many.Members, RaftMember{ID: "x"})
	}
	body, _ = many.Encode()
	for _, bad := range [][]byte{[]byte("{"), []byte(`{"members":[{"id":""}]}`), []byte(`{"term":-1}`), body} {
		if _, err := DecodeRaftStatus(bad); !errors.Is(err, remoting.ErrBadHeader) && !errors.Is(err, remoting.ErrMissingField) {
			t.Errorf("DecodeRaftStatus(%.40q): %v", bad, err)
		}
	}
}

func TestRaftNodeHeader(t *testing.T) {
	tests := []struct {
		name string
		code int32
		ext  map[string]string
		want RaftNodeHeader
		err  error
	}{
		{"remove", remoting.RaftRemoveNode, map[string]string{"node": "n2"}, RaftNodeHeader{Node: "n2"}, nil},
		{"remove without node", remoting.RaftRemoveNode, map[string]string{}, RaftNodeHeader{}, remoting.ErrMissingField},
		{"add voter", remoting.RaftAddNode, map[string]string{"node": "n2", "raftAddr": "127.0.0.1:5", "voter": "true"},
			RaftNodeHeader{Node: "n2", RaftAddr: "127.0.0.1:5", Voter: true}, nil},
		{"add without address", remoting.RaftAddNode, map[string]string{"node": "n2", "voter": "true"}, RaftNodeHeader{Node: "n2"}, remoting.ErrMissingField},
		{"add bad address", remoting.RaftAddNode, map[string]string{"node": "n2", "raftAddr": "host:5", "voter": "true"}, RaftNodeHeader{Node: "n2"}, remoting.ErrBadHeader},
		{"add port 0", remoting.RaftAddNode, map[string]string{"node": "n2", "raftAddr": "127.0.0.1:0", "voter": "x"}, RaftNodeHeader{Node: "n2"}, remoting.ErrBadHeader},
		{"transfer to any", remoting.RaftTransferLeader, map[string]string{}, RaftNodeHeader{}, nil},
		{"id with space", remoting.RaftTransferLeader, map[string]string{"node": "n 1"}, RaftNodeHeader{Node: "n 1"}, remoting.ErrBadHeader},
		{"id too long", remoting.RaftRemoveNode, map[string]string{"node": strings.Repeat("n", MaxNodeIDLen+1)},
			RaftNodeHeader{Node: strings.Repeat("n", MaxNodeIDLen+1)}, remoting.ErrBadHeader},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := DecodeRaftNodeHeader(tt.code, tt.ext)
			if tt.err != nil {
				if !errors.Is(err, tt.err) {
					t.Fatalf("error %v, want %v", err, tt.err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("got %+v %v, want %+v", got, err, tt.want)
			}
			req := got.Request(tt.code)
			again, err := DecodeRaftNodeHeader(tt.code, req.ExtFields)
			if err != nil || again != got {
				t.Fatalf("request round trip: %+v %v", again, err)
			}
		})
	}
}

func FuzzDecodeRaftStatus(f *testing.F) {
	f.Add([]byte(`{"group":"g","node":"n0","role":"leader","term":1,"members":[{"id":"n0","raftAddr":"127.0.0.1:1","voter":true}]}`))
	f.Add([]byte(`{"members":null}`))
	f.Add([]byte{0xff})
	f.Fuzz(func(t *testing.T, body []byte) {
		s, err := DecodeRaftStatus(body)
		if err != nil {
			return
		}
		again, err := s.Encode()
		if err != nil {
			t.Fatal(err)
		}
		s2, err := DecodeRaftStatus(again)
		if err != nil || !reflect.DeepEqual(s, s2) {
			t.Fatalf("re-decode: %+v %v, want %+v", s2, err, s)
		}
	})
}

func FuzzDecodeRaftNodeHeader(f *testing.F) {
	f.Add(int32(remoting.RaftAddNode), "n1", "127.0.0.1:9", "true")
	f.Add(int32(remoting.RaftRemoveNode), "", "", "")
	f.Add(int32(remoting.RaftTransferLeader), "\x00", "[::1]:1", "false")
	f.Fuzz(func(t *testing.T, code int32, node, addr, voter string) {
		h, err := DecodeRaftNodeHeader(code, map[string]string{"node": node, "raftAddr": addr, "voter": voter})
		if err != nil {
			return
		}
		again, err := DecodeRaftNodeHeader(code, h.Request(code).ExtFields)
		if err != nil || again != h {
			t.Fatalf("round trip: %+v %v, want %+v", again, err, h)
		}
	})
}

func TestRaftDrainHeader(t *testing.T) {
	for _, h := range []RaftDrainHeader{{Node: "n0", Drain: true}, {Node: "n1"}} {
		got, err := DecodeRaftDrainHeader(h.Request().ExtFields)
		if err != nil || got != h {
			t.Fatalf("round trip of %+v: %+v %v", h, got, err)
		}
	}
	for _, ext := range []map[string]string{{"drain": "true"}, {"node": "n0"}, {"node": "n 0", "drain": "true"}} {
		if _, err := DecodeRaftDrainHeader(ext); err == nil {
			t.Fatalf("%v accepted", ext)
		}
	}
}

func FuzzDecodeRaftDrainHeader(f *testing.F) {
	f.Add("n0", "true")
	f.Add("", "false")
	f.Fuzz(func(t *testing.T, node, drain string) {
		h, err := DecodeRaftDrainHeader(map[string]string{"node": node, "drain": drain})
		if err != nil {
			return
		}
		again, err := DecodeRaftDrainHeader(h.Request().ExtFields)
		if err != nil || again != h {
			t.Fatalf("round trip of %+v: %+v %v", h, again, err)
		}
	})
}
