package procs

import "fmt"

// MaxGroups bounds the broker groups of a local cluster (broker-a …
// broker-e).
const MaxGroups = 5

// GroupName is the brokerName (and raft group) of group g: broker-a,
// broker-b, ….
func GroupName(g int) string { return fmt.Sprintf("broker-%c", 'a'+g) }

// GroupNames are the names of n groups.
func GroupNames(n int) []string {
	names := make([]string, n)
	for g := range names {
		names[g] = GroupName(g)
	}
	return names
}

// NodeID is the id of node i of group g: n0, n1, … in the first group,
// b0, b1, … in broker-b, and so on. Ids are unique across groups, so
// files, logs, links and admin commands name a node by its id alone.
func NodeID(g, i int) string {
	if g == 0 {
		return fmt.Sprintf("n%d", i)
	}
	return fmt.Sprintf("%c%d", 'a'+g, i)
}

// ParseNodeID is NodeID's inverse: the group and index of id, ok false
// when id is not a node id of a group below MaxGroups.
func ParseNodeID(id string) (g, i int, ok bool) {
	if len(id) < 2 {
		return 0, 0, false
	}
	switch c := id[0]; {
	case c == 'n':
		g = 0
	case c >= 'b' && c < 'a'+MaxGroups:
		g = int(c - 'a')
	default:
		return 0, 0, false
	}
	if _, err := fmt.Sscanf(id[1:], "%d", &i); err != nil || i < 0 || NodeID(g, i) != id {
		return 0, 0, false
	}
	return g, i, true
}
