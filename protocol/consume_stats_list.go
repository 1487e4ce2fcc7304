package protocol

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/ledgermq/ledgermq/remoting"
)

// BrokerConsumeStatsRequestHeader is the header of GET_BROKER_CONSUME_STATS
// (317; Java GetConsumeStatsInBrokerHeader): ext isOrder, true to count
// only ordered topics.
type BrokerConsumeStatsRequestHeader struct {
	IsOrder bool
}

// Encode returns the ext fields.
func (h *BrokerConsumeStatsRequestHeader) Encode() map[string]string {
	return map[string]string{"isOrder": strconv.FormatBool(h.IsOrder)}
}

// Decode reads the ext fields; isOrder is false unless "true" (any case),
// as Java's Boolean.parseBoolean reads it.
func (h *BrokerConsumeStatsRequestHeader) Decode(ext map[string]string) error {
	r := extReader{header: "GET_BROKER_CONSUME_STATS request header", ext: ext}
	*h = BrokerConsumeStatsRequestHeader{IsOrder: r.bool("isOrder")}
	return nil
}

// Request returns the GET_BROKER_CONSUME_STATS request.
func (h *BrokerConsumeStatsRequestHeader) Request() *remoting.Command {
	return remoting.NewRequest(remoting.GetBrokerConsumeStats, h.Encode(), nil)
}

// GroupConsumeStats is one subscription group's entry of a
// ConsumeStatsList: one ConsumeStats per topic the group has offsets on.
type GroupConsumeStats struct {
	Group string
	Stats []ConsumeStats
}

// ConsumeStatsList is the body of GET_BROKER_CONSUME_STATS (Java
// ConsumeStatsList): every subscription group's consumption on one broker,
// the broker's address and the sum of every queue's lag.
type ConsumeStatsList struct {
	Groups     []GroupConsumeStats
	BrokerAddr string
	TotalDiff  int64
}

// Encode writes the fastjson form: consumeStatsList is a list of one-key
// maps, group name to the list of that group's ConsumeStats.
func (l ConsumeStatsList) Encode() []byte {
	var b bytes.Buffer
	b.WriteString(`{"brokerAddr":`)
	addr, _ := json.Marshal(l.BrokerAddr)
	b.Write(addr)
	b.WriteString(`,"consumeStatsList":[`)
	for i, g := range l.Groups {
		if i > 0 {
			b.WriteByte(',')
		}
		name, _ := json.Marshal(g.Group)
		b.WriteByte('{')
		b.Write(name)
		b.WriteString(`:[`)
		for j, s := range g.Stats {
			if j > 0 {
				b.WriteByte(',')
			}
			b.Write(s.Encode())
		}
		b.WriteString(`]}`)
	}
	b.WriteString(`],"totalDiff":`)
	b.WriteString(strconv.FormatInt(l.TotalDiff, 10))
	b.WriteByte('}')
	return b.Bytes()
}

// DecodeConsumeStatsList parses a GET_BROKER_CONSUME_STATS body. Its
// ConsumeStats hold fastjson's object-keyed queue tables, which are not
// JSON, so the list is walked rather than unmarshalled.
func DecodeConsumeStatsList(body []byte) (ConsumeStatsList, error) {
	var l ConsumeStatsList
	err := walkObject(body, func(key string, val []byte) (int, error) {
		switch key {
		case "brokerAddr":
			return readValue(val, &l.BrokerAddr)
		case "totalDiff":
			return readValue(val, &l.TotalDiff)
		case "consumeStatsList":
			return walkArray(val, func(elem []byte) (int, error) {
				// One map of group name to that group's list.
				return walkObjectN(elem, func(group string, list []byte) (int, error) {
					g := GroupConsumeStats{Group: group}
					n, err := walkArray(list, func(one []byte) (int, error) {
						s, n, err := readConsumeStats(one)
						g.Stats = append(g.Stats, s)
						return n, err
					})
					l.Groups = append(l.Groups, g)
					return n, err
				})
			})
		}
		return -1, nil
	})
	if err != nil {
		return ConsumeStatsList{}, fmt.Errorf("%w: consume stats list body: %w", remoting.ErrBadHeader, err)
	}
	return l, nil
}

// readConsumeStats reads one ConsumeStats object at the start of b and
// returns it and the bytes it took.
func readConsumeStats(b []byte) (ConsumeStats, int, error) {
	var s ConsumeStats
	n, err := walkObjectN(b, func(key string, val []byte) (int, error) {
		switch key {
		case "offsetTable":
			m, n, err := readQueueMap[OffsetWrapper](val)
			s.OffsetTable = m
			return n, err
		case "consumeTps":
			return readValue(val, &s.ConsumeTps)
		}
		return -1, nil
	})
	return s, n, err
}

// walkArray walks the array at the start of b, calling elem with the bytes
// from each element on (elem returns how many it took), and returns the
// bytes the array took.
func walkArray(b []byte, elem func([]byte) (int, error)) (int, error) {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '[' {
		return 0, fmt.Errorf("not an array")
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == ']' {
		return i + 1, nil
	}
	for k := 0; ; k++ {
		n, err := elem(b[i:])
		if err != nil {
			return 0, fmt.Errorf("element %d: %w", k, err)
		}
		i = skipSpace(b, i+n)
		if i >= len(b) {
			return 0, fmt.Errorf("unterminated array")
		}
		switch b[i] {
		case ']':
			return i + 1, nil
		case ',':
			i = skipSpace(b, i+1)
		default:
			return 0, fmt.Errorf("unexpected %q at byte %d", b[i], i)
		}
	}
}
