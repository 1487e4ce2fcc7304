package broker

// The group's ACL rules, replicated through raft (metadata op "acl",
// format version 3).
//
// In force: the rules the group last applied (metadata.State.ACL), parsed
// once per change: checkACL compares the applied rules' raft index (read
// without a lock) with the parsed ones' and parses again when it moved, so
// a node enforces new rules from the request after it applied them,
// whether they came in a log entry or in a snapshot it installed. Until
// the group records rules a node enforces its own file, as before, and
// while the group is below format version 3 (a rolling upgrade, or the
// seconds before a new group's leader raises its version) a change of the
// file takes effect on its node at once, like before, and is proposed
// once the version allows: an edit made in that window and a failover
// before the version is raised can leave the new leader on its own file
// until the edited node is back.
//
// Proposals: the file is how an operator edits the rules. A node proposes
// its file's content (with the file's modification time)
//
//	when                                        op
//	------------------------------------------  ---------------------------
//	it starts                                   conditional (IfNewer):
//	                                              applied only if the group
//	                                              has no rules, or if this
//	                                              file is newer than the file
//	                                              of the rules in force
//	it runs and sees its file modified (mtime   unconditional: the operator's
//	  or size moved) with content other than      edit replaces the rules
//	  the rules in force
//
// The decision of a conditional op is taken when it is applied, against
// the replicated rules (their file's modification time travels with
// them), not against this node's possibly lagging replica: every replica
// decides alike. So a node restarted or restored with a stale file (older
// than the edit in force) cannot roll the edit back, and a file edited
// while its node was down (newer) is applied when the node starts. A
// running node that sees its file modified proposes it whatever its time:
// the operator just acted (touching a node's file therefore pushes it to
// the group). Modification times come from each node's clock; a file
// copied with its old time kept (rsync -t) is older to this rule.
//
// The leader proposes itself; a follower sends the content to the leader
// (LEDGERMQ_UPDATE_ACL, 4013, signed with the cluster secret like every
// request between nodes) and the leader proposes it. A proposal that
// cannot be made yet (no leader, the group below format version 3) is kept
// and retried every ACLReloadInterval; a newer modification of the file
// replaces it. A file that does not parse, or is larger than
// metadata.MaxACLSize, is logged and proposes nothing; the rules in force
// stay. A node never writes its file: one whose file differs from the
// rules in force logs it.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ledgermq/ledgermq/acl"
	"github.com/ledgermq/ledgermq/metadata"
	"github.com/ledgermq/ledgermq/remoting"
)

// aclFormatVersion is the group format version that carries ACL ops
// (dledger's aclVersion).
const aclFormatVersion = 3

// Ext fields of LEDGERMQ_UPDATE_ACL (the body is the file's content).
const (
	extACLIfNewer  = "ifNewer"
	extACLModified = "modified"
	extACLNode     = "node"
	extACLHash     = "hash"
	extACLIndex    = "index"
)

// aclState is a set of parsed rules and where they came from.
type aclState struct {
	rules *acl.ACL
	hash  string
	// index is the raft index of the group's rules these are; 0 for this
	// node's own file (the group has no rules yet).
	index uint64
	node  string
}

// aclFileSeen is what this node last read of its file.
type aclFileSeen struct {
	mtime time.Time
	size  int64
	hash  string
}

// aclProposal is a content waiting to be proposed.
type aclProposal struct {
	content  []byte
	hash     string
	modified int64 // the file's mtime, Unix nanoseconds
	ifNewer  bool
}

// aclGuard holds the access control of one broker.
type aclGuard struct {
	// rules are the rules in force.
	rules atomic.Pointer[aclState]
	// mu serializes adopting the group's rules and the file round.
	mu sync.Mutex
	// file and pending are the reload round's (mu held).
	file    aclFileSeen
	pending *aclProposal
	// warned is the in-force hash this node last logged its file to
	// differ from.
	warned string
	// proposed counts proposals the group accepted (tests).
	proposed atomic.Uint64
}

// loadACL reads the ACL file at New; a file that does not parse stops New
// (as before: a node's start is when its operator is watching). The rules
// in force are the group's when this replica has any, else the file's.
func (b *Broker) loadACL() error {
	if !b.cfg.ACLEnable {
		return nil
	}
	content, seen, err := readACLFile(b.cfg.ACLFile)
	if err != nil {
		return err
	}
	rules, err := acl.Parse(content)
	if err != nil {
		return fmt.Errorf("broker: ACL file %s: %w", b.cfg.ACLFile, err)
	}
	g := &b.acl
	g.mu.Lock()
	g.file = seen
	g.rules.Store(&aclState{rules: rules, hash: seen.hash})
	// Proposed whatever this replica holds now (it may not have replayed
	// its log yet): the group decides at apply.
	if len(content) <= metadata.MaxACLSize {
		g.pending = &aclProposal{content: content, hash: seen.hash, modified: seen.mtime.UnixNano(), ifNewer: true}
	} else {
		b.log.Warn("ACL file too large to replicate; it is in force here only until the group has rules", "file", b.cfg.ACLFile,
			"bytes", len(content), "max", metadata.MaxACLSize)
	}
	g.mu.Unlock()
	st := b.aclInForce()
	b.log.Info("ACL loaded", "file", b.cfg.ACLFile, "accounts", rules.Accounts(), "inForce", st.hash, "index", st.index)
	return nil
}

// readACLFile reads the file, bounded by acl.MaxFileSize.
func readACLFile(path string) ([]byte, aclFileSeen, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, aclFileSeen{}, fmt.Errorf("broker: ACL file: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, aclFileSeen{}, fmt.Errorf("broker: ACL file: %w", err)
	}
	if fi.Size() > acl.MaxFileSize {
		return nil, aclFileSeen{}, fmt.Errorf("broker: ACL file %s: %w: %d bytes", path, acl.ErrBadConfig, fi.Size())
	}
	data := make([]byte, fi.Size())
	if _, err := io.ReadFull(f, data); err != nil {
		return nil, aclFileSeen{}, fmt.Errorf("broker: ACL file: %w", err)
	}
	return data, aclFileSeen{mtime: fi.ModTime(), size: fi.Size(), hash: metadata.ACLHash(data)}, nil
}

// aclInForce returns the rules to check a request with: the group's last
// applied rules (parsed again when they changed), else this node's file's.
func (b *Broker) aclInForce() *aclState {
	st := b.acl.rules.Load()
	idx := b.group.Metadata().ACLIndex()
	if idx == 0 || (st != nil && st.index == idx) {
		return st
	}
	return b.adoptACL()
}

// adoptACL parses the group's rules in force and swaps them in. Rules
// that do not parse here (they parsed where they were proposed: a node of
// another build) are logged and the previous rules stay.
func (b *Broker) adoptACL() *aclState {
	g := &b.acl
	g.mu.Lock()
	defer g.mu.Unlock()
	cur := g.rules.Load()
	r, ok := b.group.Metadata().ACL()
	if !ok || (cur != nil && cur.index == r.Index) {
		return cur
	}
	rules, err := acl.Parse(r.Content)
	if err != nil {
		b.log.Error("the group's ACL rules do not parse on this node; the previous rules stay", "hash", r.Hash, "index", r.Index, "error", err)
		if cur == nil {
			return nil
		}
		kept := *cur
		kept.index = r.Index // not parsed again for every request
		g.rules.Store(&kept)
		return &kept
	}
	st := &aclState{rules: rules, hash: r.Hash, index: r.Index, node: r.Node}
	g.rules.Store(st)
	b.log.Info("ACL rules in force", "hash", r.Hash, "index", r.Index, "from", r.Node, "accounts", rules.Accounts())
	if g.file.hash != r.Hash && g.warned != r.Hash {
		g.warned = r.Hash
		b.log.Warn("this node's ACL file differs from the group's rules in force; the group's apply", "file", b.cfg.ACLFile,
			"fileHash", g.file.hash, "inForce", r.Hash)
	}
	return st
}

// aclReloadLoop runs the ACL round every ACLReloadInterval, until Close.
func (b *Broker) aclReloadLoop() {
	defer b.wg.Done()
	t := time.NewTicker(b.cfg.ACLReloadInterval)
	defer t.Stop()
	for {
		b.reloadACL()
		select {
		case <-b.ctx.Done():
			return
		case <-t.C:
		}
	}
}

// reloadACL is one round: notice a change of the file, adopt the group's
// rules, and make the pending proposal if it can be made.
func (b *Broker) reloadACL() {
	b.readChangedACL()
	b.aclInForce()
	b.proposePendingACL()
}

// readChangedACL reads the file if its modification time or size moved
// and queues its content as an edit when it is new.
func (b *Broker) readChangedACL() {
	g := &b.acl
	g.mu.Lock()
	defer g.mu.Unlock()
	fi, err := os.Stat(b.cfg.ACLFile)
	if err != nil {
		b.log.Warn("ACL file unreadable; the rules in force stay", "file", b.cfg.ACLFile, "error", err)
		return
	}
	if fi.ModTime().Equal(g.file.mtime) && fi.Size() == g.file.size {
		return
	}
	content, seen, err := readACLFile(b.cfg.ACLFile)
	if err != nil {
		b.log.Warn("ACL file unreadable; the rules in force stay", "error", err)
		return
	}
	g.file = seen
	rules, err := acl.Parse(content)
	if err != nil {
		b.log.Warn("ACL file does not parse; the rules in force stay", "file", b.cfg.ACLFile, "error", err)
		return
	}
	if len(content) > metadata.MaxACLSize {
		b.log.Warn("ACL file too large to replicate; the rules in force stay", "file", b.cfg.ACLFile,
			"bytes", len(content), "max", metadata.MaxACLSize)
		return
	}
	if meta := b.group.Metadata(); meta.ACLIndex() == 0 && meta.FormatVersion() < aclFormatVersion {
		// The group cannot carry rules yet (a rolling upgrade, or the
		// first seconds of a new group): the file is in force here at
		// once, as before replication. Its proposal waits for the
		// version.
		g.rules.Store(&aclState{rules: rules, hash: seen.hash})
	}
	b.log.Info("ACL file changed", "file", b.cfg.ACLFile, "hash", seen.hash, "accounts", rules.Accounts())
	if r, ok := b.group.Metadata().ACL(); ok && r.Hash == seen.hash {
		g.pending = nil
		return
	}
	g.pending = &aclProposal{content: content, hash: seen.hash, modified: seen.mtime.UnixNano()}
}

// proposePendingACL makes the pending proposal: through raft on the
// leader, to the leader from a follower. A failure keeps it for the next
// round.
func (b *Broker) proposePendingACL() {
	g := &b.acl
	g.mu.Lock()
	p := g.pending
	g.mu.Unlock()
	if p == nil {
		return
	}
	if v := b.group.Metadata().FormatVersion(); v < aclFormatVersion {
		b.log.Debug("ACL change waits for the group's format version", "version", v, "needs", aclFormatVersion)
		return
	}
	ctx, cancel := context.WithTimeout(b.ctx, proposeTimeout)
	defer cancel()
	var err error
	if b.group.IsLeader() {
		err = b.proposeACL(ctx, p, b.cfg.NodeID)
	} else {
		err = b.sendACLToLeader(ctx, p)
	}
	if err != nil {
		if errors.Is(err, ErrNoLeader) || b.ctx.Err() != nil {
			b.log.Debug("ACL change not proposed yet", "error", err)
		} else {
			b.log.Warn("ACL change not proposed yet; retrying", "hash", p.hash, "error", err)
		}
		return
	}
	g.mu.Lock()
	if g.pending == p {
		g.pending = nil
	}
	g.mu.Unlock()
	g.proposed.Add(1)
	r, _ := b.group.Metadata().ACL()
	how := "edit"
	if p.ifNewer {
		how = "at start, if newer than the rules in force"
	}
	b.log.Info("ACL file proposed to the group", "hash", p.hash, "as", how, "inForce", r.Hash, "index", r.Index)
}

// proposeACL proposes p on this leader, as node's file.
func (b *Broker) proposeACL(ctx context.Context, p *aclProposal, node string) error {
	op := metadata.Op{Kind: metadata.OpACL, ACL: &metadata.ACLChange{Content: p.content, Modified: p.modified, IfNewer: p.ifNewer, Node: node}}
	if err := b.group.ProposeMetadata(ctx, op); err != nil {
		return fmt.Errorf("broker: proposing the ACL: %w", err)
	}
	return nil
}

// sendACLToLeader sends p to the leader, node-signed.
func (b *Broker) sendACLToLeader(ctx context.Context, p *aclProposal) error {
	addr := b.otherLeaderAddr()
	if addr == "" {
		return fmt.Errorf("%w: node %s knows no leader", ErrNoLeader, b.cfg.NodeID)
	}
	req := remoting.NewRequest(remoting.UpdateACL, map[string]string{
		extACLIfNewer: strconv.FormatBool(p.ifNewer), extACLModified: strconv.FormatInt(p.modified, 10), extACLNode: b.cfg.NodeID,
	}, p.content)
	b.signNode(req)
	resp, err := b.client.Invoke(ctx, addr, req)
	if err != nil {
		return fmt.Errorf("broker: ACL change to leader %s: %w", addr, err)
	}
	if resp.Code != remoting.Success {
		return fmt.Errorf("broker: ACL change to leader %s: %s (%d): %s", addr, remoting.ResponseCodeName(resp.Code), resp.Code, resp.Remark)
	}
	return nil
}

// updateACL serves LEDGERMQ_UPDATE_ACL (4013) on the leader: body = a
// plain_acl.yml, ext ifNewer, modified (the file's mtime, Unix
// nanoseconds) and node → proposed as the group's rules;
// answer ext hash and index of the rules in force after it. Another node
// of the group sends it (node-signed), or an admin account.
func (b *Broker) updateACL(ctx context.Context, req *remoting.Command) (*remoting.Command, error) {
	if !b.cfg.ACLEnable {
		return nil, fmt.Errorf("%w: the ACL is not enabled on node %s", ErrInvalidParameter, b.cfg.NodeID)
	}
	if len(req.Body) == 0 || len(req.Body) > metadata.MaxACLSize {
		return nil, fmt.Errorf("%w: ACL content of %d bytes (1 to %d)", ErrInvalidParameter, len(req.Body), metadata.MaxACLSize)
	}
	if _, err := acl.Parse(req.Body); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidParameter, err)
	}
	p := &aclProposal{content: req.Body, ifNewer: req.ExtFields[extACLIfNewer] == "true"}
	if m, ok := req.ExtFields[extACLModified]; ok {
		v, err := strconv.ParseInt(m, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%w: modified %q", ErrInvalidParameter, m)
		}
		p.modified = v
	}
	node := req.ExtFields[extACLNode]
	if len(node) > 64 {
		return nil, fmt.Errorf("%w: node name of %d bytes", ErrInvalidParameter, len(node))
	}
	pctx, cancel := context.WithTimeout(ctx, proposeTimeout)
	defer cancel()
	if err := b.proposeACL(pctx, p, node); err != nil {
		return nil, err
	}
	r, _ := b.group.Metadata().ACL()
	resp := remoting.NewResponse(req, remoting.Success, "")
	resp.ExtFields = map[string]string{extACLHash: r.Hash, extACLIndex: strconv.FormatUint(r.Index, 10)}
	return resp, nil
}

// addACLInfo adds the rules in force to GET_BROKER_RUNTIME_INFO's table:
// aclHash and aclIndex (the raft index that put them in force; 0 while
// the group has none and this node enforces its own file), aclFrom (the
// node whose file they came from) and aclFileHash (this node's file).
func (b *Broker) addACLInfo(t map[string]string) {
	if !b.cfg.ACLEnable {
		return
	}
	st := b.aclInForce()
	if st == nil {
		return
	}
	b.acl.mu.Lock()
	fileHash := b.acl.file.hash
	b.acl.mu.Unlock()
	t["aclHash"], t["aclIndex"], t["aclFrom"], t["aclFileHash"] = st.hash, strconv.FormatUint(st.index, 10), st.node, fileHash
}
