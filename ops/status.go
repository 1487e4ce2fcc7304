package ops

import "fmt"

// DefaultMaxLag is how many entries the applied index may trail the commit
// index of a ready node.
const DefaultMaxLag = 1000

// Status is what a node reports of itself.
type Status struct {
	Cluster string `json:"cluster"`
	Group   string `json:"group"`
	Node    string `json:"node"`
	Version string `json:"version"`
	// Role is leader, follower, candidate or shutdown; Leader the leader's
	// node id ("" when none is known).
	Role   string `json:"role"`
	Term   uint64 `json:"term"`
	Leader string `json:"leader"`

	LastIndex    uint64 `json:"lastIndex"`
	CommitIndex  uint64 `json:"commitIndex"`
	AppliedIndex uint64 `json:"appliedIndex"`
	// Lag is CommitIndex − AppliedIndex.
	Lag uint64 `json:"lag"`

	FormatVersion    uint32 `json:"formatVersion"`
	MaxFormatVersion uint32 `json:"maxFormatVersion"`
	// Snapshots and Restores count the raft snapshots taken and installed
	// since the node started.
	Snapshots uint64 `json:"snapshots"`
	Restores  uint64 `json:"restores"`
	// CommitLogMin and CommitLogMax bound the node's CommitLog bytes: the
	// leader's max minus a follower's is that follower's lag in bytes.
	CommitLogMin int64 `json:"commitLogMin"`
	CommitLogMax int64 `json:"commitLogMax"`

	// Recovered: the store recovered and raft runs.
	Recovered bool `json:"recovered"`
	// Failed is why the node stopped itself ("" while it runs).
	Failed string `json:"failed,omitempty"`
	// DiskError is why the store cannot write ("" while it can).
	DiskError string `json:"diskError,omitempty"`
	// Draining: the node hands its work away and should get no new clients.
	Draining bool `json:"draining"`
	// Stopping: the node is shutting down.
	Stopping bool `json:"stopping,omitempty"`
	// ReadStarved is why the node cannot read new requests ("" while it
	// can): its read budget's reserve has been used up for a while.
	ReadStarved string `json:"readStarved,omitempty"`
	// Abstaining: the node came back from a machine crash that may have
	// taken log entries it had acknowledged, and neither votes nor
	// campaigns until it has caught up with the leader.
	Abstaining bool `json:"abstaining,omitempty"`
	// Duplicates is the node's duplicate window (nil when it is off).
	Duplicates *DuplicateStatus `json:"duplicates,omitempty"`
}

// DuplicateStatus is a node's duplicate window: the producers' message
// keys it remembers, so that a retried send is stored once.
type DuplicateStatus struct {
	// Found counts the sends this node, as leader, answered from the
	// window instead of storing them again, since it started.
	Found uint64 `json:"found"`
	// Entries and Bytes: the keys held and the memory they take.
	Entries int   `json:"entries"`
	Bytes   int64 `json:"bytes"`
	// Expired and EvictedByCount count keys that left the window by age,
	// and before their time because it held its maximum (a window
	// shorter than configured: raise dedup.max_entries).
	Expired        uint64 `json:"expired"`
	EvictedByCount uint64 `json:"evictedByCount"`
}

// Ready reports whether the node should get traffic, and why not.
func (s Status) Ready(maxLag uint64) (bool, []string) {
	var why []string
	if !s.Recovered {
		why = append(why, "not recovered")
	}
	if s.Failed != "" {
		why = append(why, "stopped itself: "+s.Failed)
	}
	if s.Leader == "" {
		why = append(why, "no leader known")
	}
	if s.Lag > maxLag {
		why = append(why, fmt.Sprintf("applied index %d is %d entries behind the commit index %d (more than %d)",
			s.AppliedIndex, s.Lag, s.CommitIndex, maxLag))
	}
	if s.Abstaining {
		why = append(why, "recovering log entries a machine crash may have taken: not voting yet")
	}
	if s.DiskError != "" {
		why = append(why, "disk not writable: "+s.DiskError)
	}
	if s.Draining {
		why = append(why, "draining")
	}
	if s.Stopping {
		why = append(why, "shutting down")
	}
	if s.ReadStarved != "" {
		why = append(why, "not reading new requests: "+s.ReadStarved)
	}
	return len(why) == 0, why
}
