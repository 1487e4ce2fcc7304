package broker

import (
	"context"
	"fmt"

	"github.com/ledgermq/ledgermq/protocol"
	"github.com/ledgermq/ledgermq/remoting"
)

// raftView is this node's protocol.RaftStatus.
func (b *Broker) raftView() (protocol.RaftStatus, error) {
	st := b.group.Status()
	members, err := b.group.Members()
	if err != nil {
		return protocol.RaftStatus{}, err
	}
	out := protocol.RaftStatus{
		Group: b.cfg.BrokerName, Node: st.ID, Role: st.Role, Term: st.Term,
		Leader: st.LeaderID, LeaderAddr: b.cfg.Peers[st.LeaderID],
		LastIndex: st.LastIndex, CommitIndex: st.CommitIndex, AppliedIndex: st.AppliedIndex, StoreSeq: st.StoreSeq,
		FormatVersion: st.FormatVersion, MinFormatVersion: st.MinFormatVersion, MaxFormatVersion: st.MaxFormatVersion,
		Drained: st.Drained,
		Verifier: &protocol.RaftVerifier{
			Matched: st.Verifier.Matched, Mismatched: st.Verifier.Mismatched, Skipped: st.Verifier.Skipped,
			LastIndex: st.Verifier.LastIndex, LastTo: st.Verifier.LastTo, LastMismatch: st.Verifier.LastMismatch,
		},
	}
	for _, m := range members {
		out.Members = append(out.Members, protocol.RaftMember{ID: m.ID, RaftAddr: m.Addr, ClientAddr: b.cfg.Peers[m.ID], Voter: m.Voter})
	}
	return out, nil
}

// raftStatus serves RAFT_STATUS (4001): no header; the body is this node's
// protocol.RaftStatus as JSON.
func (b *Broker) raftStatus(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	view, err := b.raftView()
	if err != nil {
		return errorResponse(req, err)
	}
	body, err := view.Encode()
	if err != nil {
		return errorResponse(req, err)
	}
	resp := remoting.NewResponse(req, remoting.Success, "")
	resp.Body = body
	return resp
}

// raftRemoveNode serves RAFT_REMOVE_NODE (4002) on the leader: the member
// leaves the configuration. The leader does not remove itself (hand
// leadership over first), and the last voter is never removed.
func (b *Broker) raftRemoveNode(ctx context.Context, req *remoting.Command) (*remoting.Command, error) {
	h, err := protocol.DecodeRaftNodeHeader(req.Code, req.ExtFields)
	if err != nil {
		return nil, err
	}
	if h.Node == b.cfg.NodeID {
		return nil, fmt.Errorf("%w: %s is the leader; transfer leadership before removing it", ErrInvalidParameter, h.Node)
	}
	members, err := b.group.Members()
	if err != nil {
		return nil, err
	}
	found := false
	for _, m := range members {
		found = found || m.ID == h.Node
	}
	if !found {
		return nil, fmt.Errorf("%w: %s is not a member of %s", ErrInvalidParameter, h.Node, b.cfg.BrokerName)
	}
	if err := b.group.RemoveNode(ctx, h.Node); err != nil {
		return nil, err
	}
	b.log.Warn("raft member removed by an admin request", "node", h.Node)
	return remoting.NewResponse(req, remoting.Success, ""), nil
}

// raftAddNode serves RAFT_ADD_NODE (4003) on the leader: voter=false adds
// a member that replicates without voting; voter=true adds a voter or
// promotes a non-voter. Promoting only a caught-up node is the caller's
// part (ledgermq admin raft add-node and replace-node wait for it).
func (b *Broker) raftAddNode(ctx context.Context, req *remoting.Command) (*remoting.Command, error) {
	h, err := protocol.DecodeRaftNodeHeader(req.Code, req.ExtFields)
	if err != nil {
		return nil, err
	}
	if h.Voter {
		err = b.group.AddVoter(ctx, h.Node, h.RaftAddr)
	} else {
		err = b.group.AddNonvoter(ctx, h.Node, h.RaftAddr)
	}
	if err != nil {
		return nil, err
	}
	b.log.Warn("raft member added by an admin request", "node", h.Node, "raft_addr", h.RaftAddr, "voter", h.Voter)
	return remoting.NewResponse(req, remoting.Success, ""), nil
}

// raftTransferLeader serves RAFT_TRANSFER_LEADER (4004) on the leader:
// leadership goes to the named member, or to the most caught-up follower
// when node is empty; the answer comes once another node leads.
func (b *Broker) raftTransferLeader(ctx context.Context, req *remoting.Command) (*remoting.Command, error) {
	h, err := protocol.DecodeRaftNodeHeader(req.Code, req.ExtFields)
	if err != nil {
		return nil, err
	}
	if h.Node == b.cfg.NodeID {
		return remoting.NewResponse(req, remoting.Success, "already the leader"), nil
	}
	if err := b.group.TransferLeadership(ctx, h.Node); err != nil {
		return nil, err
	}
	return remoting.NewResponse(req, remoting.Success, ""), nil
}

// raftDrain serves RAFT_DRAIN (4010) on the node it names: drain=true
// hands leadership away (answered once another node leads) and keeps the
// node from campaigning until drain=false. The node keeps serving as a
// follower (sends are forwarded to the leader), so clients whose routes
// still name it lose nothing; it re-registers at once, so the name servers
// route new clients to the new leader.
func (b *Broker) raftDrain(ctx context.Context, conn *remoting.Conn, req *remoting.Command) *remoting.Command {
	h, err := protocol.DecodeRaftDrainHeader(req.ExtFields)
	if err == nil && h.Node != b.cfg.NodeID {
		err = fmt.Errorf("%w: this is node %s; send the drain of %s to it at %s", ErrInvalidParameter, b.cfg.NodeID, h.Node, b.cfg.Peers[h.Node])
	}
	if err == nil {
		if h.Drain {
			err = b.group.Drain(ctx)
		} else {
			err = b.group.Undrain()
		}
	}
	if err != nil {
		b.log.Info("drain request refused", "peer", remoteString(conn), "drain", h.Drain, "error", err)
		return errorResponse(req, err)
	}
	b.onRoleChange(b.group.Role())
	b.log.Info("drain request served", "peer", remoteString(conn), "drained", h.Drain)
	return remoting.NewResponse(req, remoting.Success, "")
}
