package routing

import (
	"sync/atomic"

	"github.com/ledgermq/ledgermq/remoting"
)

// Stats is what a name server reports of itself (for /metrics and
// /status): its route table's size, the registrations it has taken and
// refused since it started, and its remoting server's connections and
// held bytes.
type Stats struct {
	// Groups, Brokers and Topics count the broker groups, broker nodes and
	// topics of the route table.
	Groups  int `json:"groups"`
	Brokers int `json:"brokers"`
	Topics  int `json:"topics"`
	// Registrations counts REGISTER_BROKER requests answered with success
	// (including those queued for confirmation); Refused those answered
	// otherwise (unsigned, fenced, malformed, busy).
	Registrations uint64               `json:"registrations"`
	Refused       uint64               `json:"refused"`
	Remoting      remoting.ServerStats `json:"remoting"`
}

// counters are the name server's running counts.
type counters struct {
	registrations, refused atomic.Uint64
}

// Stats reports the server's current figures.
func (s *Server) Stats() Stats {
	members := s.table.Members()
	groups := map[string]struct{}{}
	for _, m := range members {
		groups[m.BrokerName] = struct{}{}
	}
	return Stats{
		Groups: len(groups), Brokers: len(members), Topics: len(s.table.Topics()),
		Registrations: s.counts.registrations.Load(), Refused: s.counts.refused.Load(),
		Remoting: s.rs.Stats(),
	}
}
