package protocol

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"strconv"
	"unicode"

	"github.com/ledgermq/ledgermq/remoting"
)

// Bounds of the raft admin requests: a node id is a short printable name,
// a group has at most MaxRaftMembers members.
const (
	MaxNodeIDLen   = 64
	MaxRaftMembers = 64
)

// RaftMember is one server of a group's raft configuration, as RAFT_STATUS
// lists it: its raft id and address, the client-facing address its broker
// serves on (empty when the answering node does not know it) and whether it
// votes.
type RaftMember struct {
	ID         string `json:"id"`
	RaftAddr   string `json:"raftAddr"`
	ClientAddr string `json:"clientAddr,omitempty"`
	Voter      bool   `json:"voter"`
}

// RaftStatus is the JSON body of a RAFT_STATUS (4001) answer: the answering
// node's own view. A follower's lag is the leader's CommitIndex minus the
// follower's AppliedIndex, each asked of the node itself.
type RaftStatus struct {
	Group string `json:"group"`
	Node  string `json:"node"`
	// Role is "leader", "follower", "candidate" or "shutdown".
	Role string `json:"role"`
	Term uint64 `json:"term"`
	// Leader is the leader's id as this node knows it ("" when none);
	// LeaderAddr its client-facing address.
	Leader       string       `json:"leader"`
	LeaderAddr   string       `json:"leaderAddr,omitempty"`
	LastIndex    uint64       `json:"lastIndex"`
	CommitIndex  uint64       `json:"commitIndex"`
	AppliedIndex uint64       `json:"appliedIndex"`
	StoreSeq     uint64       `json:"storeSeq"`
	Members      []RaftMember `json:"members"`
	// FormatVersion is the group's format version as the node applied it;
	// MinFormatVersion and MaxFormatVersion what its binary supports (0
	// from nodes that do not report them).
	FormatVersion    uint32 `json:"formatVersion,omitempty"`
	MinFormatVersion uint32 `json:"minFormatVersion,omitempty"`
	MaxFormatVersion uint32 `json:"maxFormatVersion,omitempty"`
	// Verifier is the node's replica verifier (nil from nodes without one).
	Verifier *RaftVerifier `json:"verifier,omitempty"`
	// Drained: the node is drained (it hands leadership away and does not
	// campaign) until an undrain.
	Drained bool `json:"drained,omitempty"`
}

// RaftVerifier is what a node's replica verifier found: checkpoints whose
// CommitLog range matched the leader's bytes, did not (the node stopped),
// or could not be checked here (the range is no longer held); the last
// checkpoint's raft index and CommitLog end offset; the last mismatch.
type RaftVerifier struct {
	Matched      uint64 `json:"matched"`
	Mismatched   uint64 `json:"mismatched"`
	Skipped      uint64 `json:"skipped"`
	LastIndex    uint64 `json:"lastIndex"`
	LastTo       int64  `json:"lastTo"`
	LastMismatch string `json:"lastMismatch,omitempty"`
}

// Member returns the member with id.
func (s RaftStatus) Member(id string) (RaftMember, bool) {
	for _, m := range s.Members {
		if m.ID == id {
			return m, true
		}
	}
	return RaftMember{}, false
}

// Encode is the RAFT_STATUS body.
func (s RaftStatus) Encode() ([]byte, error) { return json.Marshal(s) }

// DecodeRaftStatus parses a RAFT_STATUS body; a body that is not such JSON,
// or lists more than MaxRaftMembers members or a bad node id, is
// remoting.ErrBadHeader.
func DecodeRaftStatus(body []byte) (RaftStatus, error) {
	var s RaftStatus
	if err := json.Unmarshal(body, &s); err != nil {
		return RaftStatus{}, fmt.Errorf("%w: raft status body: %w", remoting.ErrBadHeader, err)
	}
	if len(s.Members) > MaxRaftMembers {
		return RaftStatus{}, fmt.Errorf("%w: raft status lists %d members (at most %d)", remoting.ErrBadHeader, len(s.Members), MaxRaftMembers)
	}
	for _, m := range s.Members {
		if err := checkNodeID(m.ID); err != nil {
			return RaftStatus{}, err
		}
	}
	return s, nil
}

// RaftNodeHeader is the header of RAFT_REMOVE_NODE (4002), RAFT_ADD_NODE
// (4003) and RAFT_TRANSFER_LEADER (4004), all served by the group's leader
// (a follower forwards them):
//
//	ext field  requests         meaning
//	---------  ---------------  ----------------------------------------------
//	node       4002 4003 4004   the member's raft id (4004: empty = any
//	                            caught-up follower)
//	raftAddr   4003             its raft address, ip:port
//	voter      4003             "false": join as a non-voter; "true": join as
//	                            or promote to a voter
type RaftNodeHeader struct {
	Node     string
	RaftAddr string
	Voter    bool
}

// Request builds the request of code (one of the three above).
func (h RaftNodeHeader) Request(code int32) *remoting.Command {
	ext := map[string]string{"node": h.Node}
	if code == remoting.RaftAddNode {
		ext["raftAddr"] = h.RaftAddr
		ext["voter"] = strconv.FormatBool(h.Voter)
	}
	return remoting.NewRequest(code, ext, nil)
}

// DecodeRaftNodeHeader reads the header of a request of code: a missing
// field is remoting.ErrMissingField, a bad one remoting.ErrBadHeader.
func DecodeRaftNodeHeader(code int32, ext map[string]string) (RaftNodeHeader, error) {
	var h RaftNodeHeader
	h.Node = ext["node"]
	if code != remoting.RaftTransferLeader || h.Node != "" {
		if err := checkNodeID(h.Node); err != nil {
			return h, err
		}
	}
	if code != remoting.RaftAddNode {
		return h, nil
	}
	var err error
	if h.RaftAddr, err = remoting.ExtString(ext, "raftAddr"); err != nil {
		return h, err
	}
	if ap, perr := netip.ParseAddrPort(h.RaftAddr); perr != nil || ap.Port() == 0 {
		return h, fmt.Errorf("%w: raftAddr %q is not an ip:port", remoting.ErrBadHeader, h.RaftAddr)
	}
	if h.Voter, err = remoting.ExtBool(ext, "voter"); err != nil {
		return h, err
	}
	return h, nil
}

// RaftDrainHeader is the header of RAFT_DRAIN (4010), served by the node
// it names (any other node refuses it, naming the node's address):
//
//	ext field  meaning
//	---------  ---------------------------------------------------------
//	node       the node's raft id
//	drain      "true": drain it (leadership handed away, no campaigning;
//	           answered once another node leads); "false": undrain it
type RaftDrainHeader struct {
	Node  string
	Drain bool
}

// Request builds the RAFT_DRAIN request.
func (h RaftDrainHeader) Request() *remoting.Command {
	return remoting.NewRequest(remoting.RaftDrain, map[string]string{"node": h.Node, "drain": strconv.FormatBool(h.Drain)}, nil)
}

// DecodeRaftDrainHeader reads a RAFT_DRAIN header: a missing field is
// remoting.ErrMissingField, a bad one remoting.ErrBadHeader.
func DecodeRaftDrainHeader(ext map[string]string) (RaftDrainHeader, error) {
	h := RaftDrainHeader{Node: ext["node"]}
	if err := checkNodeID(h.Node); err != nil {
		return h, err
	}
	var err error
	h.Drain, err = remoting.ExtBool(ext, "drain")
	return h, err
}

// checkNodeID accepts a raft id of 1..MaxNodeIDLen printable, non-space
// characters.
func checkNodeID(id string) error {
	if id == "" {
		return fmt.Errorf("%w: %q", remoting.ErrMissingField, "node")
	}
	if len(id) > MaxNodeIDLen {
		return fmt.Errorf("%w: node id of %d bytes (at most %d)", remoting.ErrBadHeader, len(id), MaxNodeIDLen)
	}
	for _, r := range id {
		if !unicode.IsPrint(r) || unicode.IsSpace(r) {
			return fmt.Errorf("%w: node id %q has a space or unprintable character", remoting.ErrBadHeader, id)
		}
	}
	return nil
}

// RaftStatusRequest returns the RAFT_STATUS request (no header).
func RaftStatusRequest() *remoting.Command { return remoting.NewRequest(remoting.RaftStatus, nil, nil) }
