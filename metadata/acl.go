package metadata

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
)

// OpACL replaces the group's access-control rules (Op.ACL): the content
// of a plain_acl.yml, which the broker parses. The metadata keeps the
// bytes and their hash only; it never parses them, so apply does not
// depend on the YAML decoder.
const OpACL = "acl"

// MaxACLSize bounds the rules one op carries (and the state keeps): what
// a raft entry may reasonably hold. A larger file is refused before it is
// proposed.
const MaxACLSize = 1 << 20

// ACLChange is the payload of an OpACL.
type ACLChange struct {
	// Content is the file's bytes (base64 in JSON, so any byte survives).
	Content []byte `json:"content"`
	// Modified is the file's modification time (Unix nanoseconds) where
	// it was read.
	Modified int64 `json:"modified,omitempty"`
	// IfNewer makes the change conditional: it is applied only when no
	// rules are in force or its file is newer (Modified) than the file of
	// the rules in force. A node proposes its file that way when it
	// starts, so a node whose file is older than an edit made elsewhere
	// cannot roll the edit back. A change a running node observed in its
	// file (an operator's edit) is unconditional.
	IfNewer bool `json:"ifNewer,omitempty"`
	// Node is the node whose file the content came from (shown, not used).
	Node string `json:"node,omitempty"`
}

// ACLRules are the access-control rules in force in the group.
type ACLRules struct {
	Content []byte `json:"content"`
	// Hash is the hex SHA-256 of Content; Index the raft index of the op
	// that put them in force; Node where they came from.
	Hash     string `json:"hash"`
	Index    uint64 `json:"index"`
	Modified int64  `json:"modified,omitempty"`
	Node     string `json:"node,omitempty"`
}

// ACLHash is the hash the state keeps of ACL content.
func ACLHash(content []byte) string {
	s := sha256.Sum256(content)
	return hex.EncodeToString(s[:])
}

func (c *ACLChange) validate() error {
	if c == nil || len(c.Content) == 0 {
		return fmt.Errorf("%w: acl op without content", ErrBadOp)
	}
	if len(c.Content) > MaxACLSize {
		return fmt.Errorf("%w: acl content of %d bytes, at most %d", ErrBadOp, len(c.Content), MaxACLSize)
	}
	if len(c.Node) > 256 {
		return fmt.Errorf("%w: acl op node name of %d bytes", ErrBadOp, len(c.Node))
	}
	return nil
}

// applyACL applies an OpACL at index (s.mu held). It reports whether the
// rules in force changed. It compares the op with the state only, so every
// replica decides alike.
func (s *State) applyACL(index uint64, c *ACLChange) bool {
	h := ACLHash(c.Content)
	if s.acl != nil && (s.acl.Hash == h || (c.IfNewer && c.Modified <= s.acl.Modified)) {
		return false
	}
	s.acl = &ACLRules{Content: slices.Clone(c.Content), Hash: h, Index: index, Modified: c.Modified, Node: c.Node}
	s.aclIndex.Store(index)
	return true
}

// ACL returns the rules in force, if the group recorded any.
func (s *State) ACL() (ACLRules, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.acl == nil {
		return ACLRules{}, false
	}
	return *s.acl, true
}

// ACLIndex is the raft index of the rules in force (0: none recorded). It
// takes no lock: the broker compares it on every request.
func (s *State) ACLIndex() uint64 { return s.aclIndex.Load() }

// validateACLFile checks the ACL part of a saved state.
func validateACLFile(r *ACLRules) error {
	if r == nil {
		return nil
	}
	if len(r.Content) == 0 || len(r.Content) > MaxACLSize || r.Index == 0 {
		return fmt.Errorf("%w: acl rules of %d bytes at index %d", ErrBadFile, len(r.Content), r.Index)
	}
	if ACLHash(r.Content) != r.Hash {
		return fmt.Errorf("%w: acl rules do not match their hash", ErrBadFile)
	}
	return nil
}
