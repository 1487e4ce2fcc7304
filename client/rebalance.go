package client

import (
	"crypto/md5"
	"encoding/binary"
	"fmt"
	"slices"
	"sort"
	"strings"
)

// AllocateStrategy shares a topic's queues among a clustering group's
// members. queues and clientIDs are sorted (queues by topic, broker, id;
// ids as strings) and the same for every member, so each member computes
// its own share and the shares partition the queues. It returns clientID's
// share (nil when clientID is not in clientIDs).
type AllocateStrategy func(clientID string, queues []Queue, clientIDs []string) []Queue

// AllocateAveragely gives each member a contiguous block of queues, the
// first len(queues) mod len(clientIDs) members one more (RocketMQ's
// AllocateMessageQueueAveragely, the default of every RocketMQ client,
// so a group can mix our consumers and theirs).
func AllocateAveragely(clientID string, queues []Queue, clientIDs []string) []Queue {
	index := slices.Index(clientIDs, clientID)
	if index < 0 || len(queues) == 0 {
		return nil
	}
	n, m := len(queues), len(clientIDs)
	mod := n % m
	size := n / m
	if n <= m {
		size = 1
	} else if mod > 0 && index < mod {
		size++
	}
	start := index*size + mod
	if mod > 0 && index < mod {
		start = index * size
	}
	var out []Queue
	for i := 0; i < min(size, n-start); i++ {
		out = append(out, queues[(start+i)%n])
	}
	return out
}

// AllocateAveragelyByCircle deals the queues out in turn: member i gets
// queues i, i+m, i+2m, … (AllocateMessageQueueAveragelyByCircle).
func AllocateAveragelyByCircle(clientID string, queues []Queue, clientIDs []string) []Queue {
	index := slices.Index(clientIDs, clientID)
	if index < 0 {
		return nil
	}
	var out []Queue
	for i := index; i < len(queues); i += len(clientIDs) {
		out = append(out, queues[i])
	}
	return out
}

// consistentHashReplicas is the virtual nodes per member of
// AllocateConsistentHash.
const consistentHashReplicas = 10

// AllocateConsistentHash places every member on a hash ring
// (consistentHashReplicas virtual nodes each, MD5 of "id-i") and gives
// each queue to the first node at or after the queue's hash, so a member
// joining or leaving moves only the queues next to its nodes. The ring's
// hash is not the one RocketMQ's Java strategy uses: a group must not mix
// clients on this strategy.
func AllocateConsistentHash(clientID string, queues []Queue, clientIDs []string) []Queue {
	if !slices.Contains(clientIDs, clientID) {
		return nil
	}
	type node struct {
		hash uint64
		id   string
	}
	ring := make([]node, 0, len(clientIDs)*consistentHashReplicas)
	for _, id := range clientIDs {
		for i := range consistentHashReplicas {
			ring = append(ring, node{ringHash(fmt.Sprintf("%s-%d", id, i)), id})
		}
	}
	slices.SortFunc(ring, func(a, b node) int {
		if a.hash != b.hash {
			if a.hash < b.hash {
				return -1
			}
			return 1
		}
		return strings.Compare(a.id, b.id)
	})
	var out []Queue
	for _, q := range queues {
		h := ringHash(q.String())
		i := sort.Search(len(ring), func(i int) bool { return ring[i].hash >= h })
		if i == len(ring) {
			i = 0
		}
		if ring[i].id == clientID {
			out = append(out, q)
		}
	}
	return out
}

func ringHash(s string) uint64 {
	sum := md5.Sum([]byte(s))
	return binary.BigEndian.Uint64(sum[:8])
}
