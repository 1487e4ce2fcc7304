package protocol

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/ledgermq/ledgermq/remoting"
)

// Bounds applied by the body decoders. A route is turned into one object
// per queue by every client, so a hostile name server must not be able to
// make it allocate without limit.
const (
	// MaxQueueNums bounds a topic's read and write queue counts (the name
	// server applies the same bound to registrations).
	MaxQueueNums = 1 << 16
)

// Permission bits of QueueData.Perm (Java PermName).
const (
	PermPriority int32 = 8
	PermRead     int32 = 4
	PermWrite    int32 = 2
	PermInherit  int32 = 1
)

// LeaderBrokerID is the brokerId of a group's writable member: the Raft
// leader (RocketMQ's MASTER_ID).
const LeaderBrokerID int64 = 0

// GetRouteInfoRequestHeader is the header of GET_ROUTEINFO_BY_TOPIC (105),
// client → name server.
//
//	field                   ext name                required
//	----------------------  ----------------------  --------
//	Topic                   topic                   yes
//	AcceptStandardJSONOnly  acceptStandardJsonOnly  (Java 5; written only when true)
type GetRouteInfoRequestHeader struct {
	Topic string
	// AcceptStandardJSONOnly asks a Java name server for standard JSON
	// ({"0":"addr"}) whatever the client's version. Java name servers
	// send it anyway to clients of version >= V4_9_4, which includes
	// every request this module builds (remoting.Version).
	AcceptStandardJSONOnly bool
}

const extAcceptStandardJSONOnly = "acceptStandardJsonOnly"

// Encode returns the ext fields.
func (h *GetRouteInfoRequestHeader) Encode() map[string]string {
	ext := map[string]string{"topic": h.Topic}
	if h.AcceptStandardJSONOnly {
		ext[extAcceptStandardJSONOnly] = "true"
	}
	return ext
}

// Decode reads the ext fields; a missing topic wraps
// remoting.ErrMissingField.
func (h *GetRouteInfoRequestHeader) Decode(ext map[string]string) error {
	r := extReader{header: "GET_ROUTEINFO_BY_TOPIC request header", ext: ext}
	out := GetRouteInfoRequestHeader{Topic: r.str("topic", true), AcceptStandardJSONOnly: r.bool(extAcceptStandardJSONOnly)}
	if r.err != nil {
		return r.err
	}
	*h = out
	return nil
}

// Request returns the GET_ROUTEINFO_BY_TOPIC request.
func (h *GetRouteInfoRequestHeader) Request() *remoting.Command {
	return remoting.NewRequest(remoting.GetRouteInfoByTopic, h.Encode(), nil)
}

// QueueData is one broker group's queues of a topic in a route.
type QueueData struct {
	BrokerName     string `json:"brokerName"`
	ReadQueueNums  int32  `json:"readQueueNums"`
	WriteQueueNums int32  `json:"writeQueueNums"`
	Perm           int32  `json:"perm"`
	TopicSysFlag   int32  `json:"topicSysFlag"`
}

// Readable and Writable report the permission bits.
func (q *QueueData) Readable() bool { return q.Perm&PermRead != 0 }
func (q *QueueData) Writable() bool { return q.Perm&PermWrite != 0 }

// BrokerData is one broker group: its cluster, its name and the address
// of every live member by brokerId (LeaderBrokerID = the Raft leader). On
// the wire the ids are JSON object keys: {"0":"10.0.0.1:10911"}. Decoded
// values always have a non-nil BrokerAddrs, and Encode writes {} for a nil
// one: rocketmq-client-go needs the key even when it is empty.
type BrokerData struct {
	Cluster     string           `json:"cluster"`
	BrokerName  string           `json:"brokerName"`
	BrokerAddrs map[int64]string `json:"brokerAddrs"`
}

// LeaderAddr returns the address of the group's leader (brokerId 0).
func (b *BrokerData) LeaderAddr() (string, bool) {
	addr, ok := b.BrokerAddrs[LeaderBrokerID]
	return addr, ok && addr != ""
}

// TopicRouteData is the body of a successful GET_ROUTEINFO_BY_TOPIC: the
// queues of every broker group serving the topic and those groups'
// members. Our name server sorts both lists by broker name.
//
//	{"queueDatas":[{"brokerName":"broker-a","readQueueNums":4,"writeQueueNums":4,"perm":6,"topicSysFlag":0}],
//	 "brokerDatas":[{"cluster":"DefaultCluster","brokerName":"broker-a","brokerAddrs":{"0":"127.0.0.1:10911"}}],
//	 "filterServerTable":{}}
//
// OrderTopicConf ("broker-a:4;broker-b:4"), when present, lists the
// writable queues of an ordered topic by itself.
type TopicRouteData struct {
	OrderTopicConf    string              `json:"orderTopicConf,omitempty"`
	QueueDatas        []QueueData         `json:"queueDatas"`
	BrokerDatas       []BrokerData        `json:"brokerDatas"`
	FilterServerTable map[string][]string `json:"filterServerTable"`
}

// DecodeTopicRouteData decodes and checks a route body: a JSON object
// (keys matched case-insensitively, as encoding/json), queue counts in
// [0, MaxQueueNums], a non-empty brokerName on every entry. Absent or null
// lists and maps decode as empty ones, so a decoded route re-encodes as
// our name server writes it. Errors wrap ErrBadBody. It never panics.
func DecodeTopicRouteData(body []byte) (*TopicRouteData, error) {
	r := &TopicRouteData{}
	if err := decodeObject(body, r, "topic route"); err != nil {
		return nil, err
	}
	if r.QueueDatas == nil {
		r.QueueDatas = []QueueData{}
	}
	if r.BrokerDatas == nil {
		r.BrokerDatas = []BrokerData{}
	}
	if r.FilterServerTable == nil {
		r.FilterServerTable = map[string][]string{}
	}
	for i := range r.QueueDatas {
		if err := checkQueueData(&r.QueueDatas[i]); err != "" {
			return nil, fmt.Errorf("%w: topic route: queueDatas[%d]: %s", ErrBadBody, i, err)
		}
	}
	for i := range r.BrokerDatas {
		if err := normalizeBrokerData(&r.BrokerDatas[i]); err != "" {
			return nil, fmt.Errorf("%w: topic route: brokerDatas[%d]: %s", ErrBadBody, i, err)
		}
	}
	return r, nil
}

// Encode returns the route as compact JSON (no whitespace: the Go client
// splits brokerAddrs text on ',' and ':' without trimming), with empty
// lists and maps rather than null.
func (r *TopicRouteData) Encode() ([]byte, error) {
	out := *r
	if out.QueueDatas == nil {
		out.QueueDatas = []QueueData{}
	}
	out.BrokerDatas = withAddrs(r.BrokerDatas)
	if out.FilterServerTable == nil {
		out.FilterServerTable = map[string][]string{}
	}
	return json.Marshal(&out)
}

// Broker returns the BrokerData of the named group.
func (r *TopicRouteData) Broker(name string) (*BrokerData, bool) {
	for i := range r.BrokerDatas {
		if r.BrokerDatas[i].BrokerName == name {
			return &r.BrokerDatas[i], true
		}
	}
	return nil, false
}

// ClusterInfo is the body of GET_BROKER_CLUSTER_INFO (106): every broker
// group by name, and the group names of every cluster. The request has no
// ext fields.
//
//	{"brokerAddrTable":{"broker-a":{"cluster":"DefaultCluster","brokerName":"broker-a","brokerAddrs":{"0":"…"}}},
//	 "clusterAddrTable":{"DefaultCluster":["broker-a"]}}
type ClusterInfo struct {
	BrokerAddrTable  map[string]BrokerData `json:"brokerAddrTable"`
	ClusterAddrTable map[string][]string   `json:"clusterAddrTable"`
}

// ClusterInfoRequest returns the GET_BROKER_CLUSTER_INFO request.
func ClusterInfoRequest() *remoting.Command {
	return remoting.NewRequest(remoting.GetBrokerClusterInfo, nil, nil)
}

// DecodeClusterInfo decodes and checks a cluster-info body: a JSON object,
// every group with a non-empty brokerName equal to its table key (Java
// keys the table by it). Absent or null tables decode as empty ones.
// Errors wrap ErrBadBody. It never panics.
func DecodeClusterInfo(body []byte) (*ClusterInfo, error) {
	c := &ClusterInfo{}
	if err := decodeObject(body, c, "cluster info"); err != nil {
		return nil, err
	}
	if c.BrokerAddrTable == nil {
		c.BrokerAddrTable = map[string]BrokerData{}
	}
	if c.ClusterAddrTable == nil {
		c.ClusterAddrTable = map[string][]string{}
	}
	for name, bd := range c.BrokerAddrTable {
		if err := normalizeBrokerData(&bd); err != "" {
			return nil, fmt.Errorf("%w: cluster info: brokerAddrTable[%s]: %s", ErrBadBody, quote(name), err)
		}
		if bd.BrokerName != name {
			return nil, fmt.Errorf("%w: cluster info: group %s listed under key %s", ErrBadBody, quote(bd.BrokerName), quote(name))
		}
		c.BrokerAddrTable[name] = bd
	}
	for name, groups := range c.ClusterAddrTable {
		if groups == nil {
			c.ClusterAddrTable[name] = []string{}
		}
	}
	return c, nil
}

// Encode returns the cluster info as compact JSON.
func (c *ClusterInfo) Encode() ([]byte, error) {
	out := ClusterInfo{BrokerAddrTable: make(map[string]BrokerData, len(c.BrokerAddrTable)), ClusterAddrTable: c.ClusterAddrTable}
	for name, bd := range c.BrokerAddrTable {
		if bd.BrokerAddrs == nil {
			bd.BrokerAddrs = map[int64]string{}
		}
		out.BrokerAddrTable[name] = bd
	}
	if out.ClusterAddrTable == nil {
		out.ClusterAddrTable = map[string][]string{}
	}
	return json.Marshal(&out)
}

// decodeObject unmarshals body into v, which must be a JSON object ("null"
// would otherwise decode to nothing).
func decodeObject(body []byte, v any, what string) error {
	trimmed := bytes.TrimLeft(body, " \t\r\n")
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return fmt.Errorf("%w: %s: not a JSON object", ErrBadBody, what)
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("%w: %s: %w", ErrBadBody, what, err)
	}
	return nil
}

// checkQueueData returns what is wrong with q, or "".
func checkQueueData(q *QueueData) string {
	switch {
	case q.BrokerName == "":
		return "empty brokerName"
	case q.ReadQueueNums < 0 || q.ReadQueueNums > MaxQueueNums:
		return "readQueueNums " + strconv.Itoa(int(q.ReadQueueNums)) + " out of range"
	case q.WriteQueueNums < 0 || q.WriteQueueNums > MaxQueueNums:
		return "writeQueueNums " + strconv.Itoa(int(q.WriteQueueNums)) + " out of range"
	}
	return ""
}

// normalizeBrokerData gives b a non-nil BrokerAddrs and returns what is
// wrong with it, or "".
func normalizeBrokerData(b *BrokerData) string {
	if b.BrokerName == "" {
		return "empty brokerName"
	}
	if b.BrokerAddrs == nil {
		b.BrokerAddrs = map[int64]string{}
	}
	return ""
}

// withAddrs returns bds with every nil BrokerAddrs replaced by an empty
// map, copying only when it must.
func withAddrs(bds []BrokerData) []BrokerData {
	if bds == nil {
		return []BrokerData{}
	}
	for i := range bds {
		if bds[i].BrokerAddrs == nil {
			out := make([]BrokerData, len(bds))
			copy(out, bds)
			for j := range out {
				if out[j].BrokerAddrs == nil {
					out[j].BrokerAddrs = map[int64]string{}
				}
			}
			return out
		}
	}
	return bds
}
