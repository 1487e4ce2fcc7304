package faultnet

import "fmt"

// link is a directed pair of node ids.
type link struct {
	from, to string
}

// restGroup is the partition group of every node not listed in Partition.
const restGroup = -1

// policy is the fault configuration of a Network: which node may open (and
// keep) a connection to which. It is a plain value guarded by Network.mu;
// every method is pure.
type policy struct {
	groups   map[string]int // nil: no partition in force
	isolated map[string]bool
	blocked  map[link]bool
}

func newPolicy() policy {
	return policy{isolated: map[string]bool{}, blocked: map[link]bool{}}
}

// allows reports whether a connection initiated by from towards to may
// exist. A node may always talk to itself.
func (p *policy) allows(from, to string) bool {
	if from == to {
		return true
	}
	if p.isolated[from] || p.isolated[to] {
		return false
	}
	if p.groups != nil && p.group(from) != p.group(to) {
		return false
	}
	return !p.blocked[link{from, to}]
}

func (p *policy) group(id string) int {
	if g, ok := p.groups[id]; ok {
		return g
	}
	return restGroup
}

// partitionGroups builds the group map for Partition. Nodes not listed belong to
// restGroup together.
func partitionGroups(groups [][]string) (map[string]int, error) {
	m := make(map[string]int)
	for gi, g := range groups {
		for _, id := range g {
			if !validID(id) {
				return nil, fmt.Errorf("%w: %w: %q", ErrBadPartition, ErrInvalidID, id)
			}
			if prev, ok := m[id]; ok && prev != gi {
				return nil, fmt.Errorf("%w: node %q is in groups %d and %d", ErrBadPartition, id, prev, gi)
			}
			m[id] = gi
		}
	}
	return m, nil
}

// clear removes every partition, isolation and block.
func (p *policy) clear() {
	p.groups = nil
	clear(p.isolated)
	clear(p.blocked)
}
