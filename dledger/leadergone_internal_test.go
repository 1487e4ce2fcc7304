package dledger

import "testing"

// TestCampaignRank: the shortest log campaigns first and the longest last,
// ties broken by node id; a voter that leads already ends the early
// campaign.
func TestCampaignRank(t *testing.T) {
	for _, tc := range []struct {
		name     string
		self     string
		last     uint64
		answered []nodeInfo
		rank     int
		ok       bool
	}{
		{"alone", "n1", 10, nil, 0, true},
		{"longest log last", "n1", 11, []nodeInfo{{Node: "n2", LastIndex: 10}}, 1, true},
		{"shortest log first", "n1", 9, []nodeInfo{{Node: "n2", LastIndex: 10}}, 0, true},
		{"tie: smaller id first", "n1", 10, []nodeInfo{{Node: "n2", LastIndex: 10}}, 0, true},
		{"tie: larger id last", "n2", 10, []nodeInfo{{Node: "n1", LastIndex: 10}}, 1, true},
		{"five nodes", "n3", 10, []nodeInfo{{Node: "n1", LastIndex: 9}, {Node: "n2", LastIndex: 10}, {Node: "n4", LastIndex: 12}}, 2, true},
		{"an older binary says nothing of its log", "n1", 10, []nodeInfo{{Node: "n2"}}, 1, true},
		{"someone leads", "n1", 10, []nodeInfo{{Node: "n2", LastIndex: 10, Leader: true}}, 0, false},
	} {
		rank, ok := campaignRank(tc.self, tc.last, tc.answered)
		if rank != tc.rank || ok != tc.ok {
			t.Errorf("%s: rank %d ok %v, want %d %v", tc.name, rank, ok, tc.rank, tc.ok)
		}
	}
}
