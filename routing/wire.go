package routing

// The JSON bodies of the name-server requests, with RocketMQ's key names
// (doc.go shows each one). Keys are matched case-insensitively on input
// (encoding/json) and written exactly as below.

// Topic filter types of TopicConfig.TopicFilterType.
const (
	FilterSingleTag = "SINGLE_TAG"
	FilterMultiTag  = "MULTI_TAG"
)

// DataVersion is RocketMQ's DataVersion: the version of a broker's topic
// table. Timestamp and Counter change whenever the table changes; the name
// server re-reads the topics of a leader registration only when they (or
// the leader) change. StateVersion carries the broker's Raft term (I6).
type DataVersion struct {
	StateVersion int64 `json:"stateVersion"`
	Timestamp    int64 `json:"timestamp"`
	Counter      int64 `json:"counter"`
}

// TopicConfig is one topic of a broker's topic table, as RocketMQ's
// TopicConfig. The name server keeps ReadQueueNums, WriteQueueNums, Perm
// and TopicSysFlag; the other fields travel for compatibility.
type TopicConfig struct {
	TopicName       string            `json:"topicName"`
	ReadQueueNums   int32             `json:"readQueueNums"`
	WriteQueueNums  int32             `json:"writeQueueNums"`
	Perm            int32             `json:"perm"`
	TopicFilterType string            `json:"topicFilterType"`
	TopicSysFlag    int32             `json:"topicSysFlag"`
	Order           bool              `json:"order"`
	Attributes      map[string]string `json:"attributes,omitempty"`
}

// TopicConfigWrapper is RocketMQ's TopicConfigSerializeWrapper: the topic
// table keyed by topic name, and its version.
type TopicConfigWrapper struct {
	TopicConfigTable map[string]TopicConfig `json:"topicConfigTable"`
	DataVersion      DataVersion            `json:"dataVersion"`
}

// RegisterBrokerBody is the body of REGISTER_BROKER (RocketMQ's
// RegisterBrokerBody). Decode it with DecodeRegisterBody and build it with
// Encode.
type RegisterBrokerBody struct {
	TopicConfigSerializeWrapper TopicConfigWrapper `json:"topicConfigSerializeWrapper"`
	FilterServerList            []string           `json:"filterServerList"`
}

// QueueData is one broker group's queues of a topic in a route.
type QueueData struct {
	BrokerName     string `json:"brokerName"`
	ReadQueueNums  int32  `json:"readQueueNums"`
	WriteQueueNums int32  `json:"writeQueueNums"`
	Perm           int32  `json:"perm"`
	TopicSysFlag   int32  `json:"topicSysFlag"`
}

// BrokerData is one broker group: its cluster, its name and the address of
// every live member by broker id (0 = the Raft leader). On the wire the
// ids are JSON object keys, so strings: {"0":"10.0.0.1:10911"}.
// BrokerAddrs is never nil in what this package builds: clients index the
// object's text and need the key even when it is {}.
type BrokerData struct {
	Cluster     string           `json:"cluster"`
	BrokerName  string           `json:"brokerName"`
	BrokerAddrs map[int64]string `json:"brokerAddrs"`
}

// TopicRouteData is the body of a successful GET_ROUTEINFO_BY_TOPIC: the
// queues of every broker group serving the topic and those groups'
// members. QueueDatas and BrokerDatas are sorted by broker name.
type TopicRouteData struct {
	OrderTopicConf    string              `json:"orderTopicConf,omitempty"`
	QueueDatas        []QueueData         `json:"queueDatas"`
	BrokerDatas       []BrokerData        `json:"brokerDatas"`
	FilterServerTable map[string][]string `json:"filterServerTable"`
}

// ClusterInfo is the body of GET_BROKER_CLUSTER_INFO: every broker group
// by name, and the group names of every cluster (sorted).
type ClusterInfo struct {
	BrokerAddrTable  map[string]BrokerData `json:"brokerAddrTable"`
	ClusterAddrTable map[string][]string   `json:"clusterAddrTable"`
}

// TopicList is the body of GET_ALL_TOPIC_LIST_FROM_NAMESERVER (sorted).
type TopicList struct {
	TopicList []string `json:"topicList"`
}
