package protocol

import "github.com/ledgermq/ledgermq/remoting"

// The admin requests that create and delete topics and subscription
// groups:
//
//	code  request                         direction          header
//	----  ------------------------------  -----------------  ------------------------------------
//	17    UPDATE_AND_CREATE_TOPIC         admin → broker     CreateTopicRequestHeader
//	215   DELETE_TOPIC_IN_BROKER          admin → broker     DeleteTopicRequestHeader
//	216   DELETE_TOPIC_IN_NAMESRV         admin → namesrv    DeleteTopicFromNamesrvRequestHeader
//	207   DELETE_SUBSCRIPTIONGROUP        admin → broker     DeleteSubscriptionGroupRequestHeader
//	352   GET_SUBSCRIPTIONGROUP_CONFIG    admin → broker     GetSubscriptionGroupConfigRequestHeader
//
// The broker checks names, queue counts, perm and filter type.

// Defaults of CreateTopicRequestHeader's optional numbers, those of the
// Go admin.
const (
	DefaultCreateQueueNums int32 = 8
	DefaultCreatePerm      int32 = PermRead | PermWrite
)

// CreateTopicRequestHeader is the header of UPDATE_AND_CREATE_TOPIC (17).
//
//	field            ext name         required  absent or empty reads
//	---------------  ---------------  --------  ---------------------
//	Topic            topic            yes
//	DefaultTopic     defaultTopic               ""  (TBW102 from our admin)
//	ReadQueueNums    readQueueNums              8
//	WriteQueueNums   writeQueueNums             8
//	Perm             perm                       6
//	TopicFilterType  topicFilterType            ""  (the broker: SINGLE_TAG)
//	TopicSysFlag     topicSysFlag               0
//	Order            order                      false
type CreateTopicRequestHeader struct {
	Topic           string
	DefaultTopic    string
	ReadQueueNums   int32
	WriteQueueNums  int32
	Perm            int32
	TopicFilterType string
	TopicSysFlag    int32
	Order           bool
	// Attributes is RocketMQ 5's attribute changes: "+key=value" sets,
	// "-key" removes, comma-separated (ParseAttributes); "" changes none.
	Attributes string
}

// Encode returns the ext fields, every field written (attributes only
// when set, as a 4.x client leaves them out).
func (h *CreateTopicRequestHeader) Encode() map[string]string {
	ext := map[string]string{
		"topic":           h.Topic,
		"defaultTopic":    h.DefaultTopic,
		"readQueueNums":   itoa32(h.ReadQueueNums),
		"writeQueueNums":  itoa32(h.WriteQueueNums),
		"perm":            itoa32(h.Perm),
		"topicFilterType": h.TopicFilterType,
		"topicSysFlag":    itoa32(h.TopicSysFlag),
		"order":           boolString(h.Order),
	}
	if h.Attributes != "" {
		ext["attributes"] = h.Attributes
	}
	return ext
}

// Decode reads the ext fields, with the defaults above. A missing topic
// wraps remoting.ErrMissingField, a malformed number remoting.ErrBadHeader.
func (h *CreateTopicRequestHeader) Decode(ext map[string]string) error {
	r := extReader{header: "UPDATE_AND_CREATE_TOPIC request header", ext: ext}
	out := CreateTopicRequestHeader{
		Topic:           r.str("topic", true),
		DefaultTopic:    r.str("defaultTopic", false),
		ReadQueueNums:   r.int32Or("readQueueNums", DefaultCreateQueueNums),
		WriteQueueNums:  r.int32Or("writeQueueNums", DefaultCreateQueueNums),
		Perm:            r.int32Or("perm", DefaultCreatePerm),
		TopicFilterType: r.str("topicFilterType", false),
		TopicSysFlag:    r.int32("topicSysFlag", false),
		Order:           r.bool("order"),
		Attributes:      r.str("attributes", false),
	}
	if r.err != nil {
		return r.err
	}
	*h = out
	return nil
}

// Request returns the UPDATE_AND_CREATE_TOPIC request.
func (h *CreateTopicRequestHeader) Request() *remoting.Command {
	return remoting.NewRequest(remoting.UpdateAndCreateTopic, h.Encode(), nil)
}

// DeleteTopicRequestHeader is the header of DELETE_TOPIC_IN_BROKER (215):
// ext topic (required).
type DeleteTopicRequestHeader struct {
	Topic string
}

// Encode returns the ext fields.
func (h *DeleteTopicRequestHeader) Encode() map[string]string {
	return map[string]string{"topic": h.Topic}
}

// Decode reads the ext fields; a missing topic wraps
// remoting.ErrMissingField.
func (h *DeleteTopicRequestHeader) Decode(ext map[string]string) error {
	r := extReader{header: "DELETE_TOPIC_IN_BROKER request header", ext: ext}
	out := DeleteTopicRequestHeader{Topic: r.str("topic", true)}
	if r.err != nil {
		return r.err
	}
	*h = out
	return nil
}

// Request returns the DELETE_TOPIC_IN_BROKER request.
func (h *DeleteTopicRequestHeader) Request() *remoting.Command {
	return remoting.NewRequest(remoting.DeleteTopicInBroker, h.Encode(), nil)
}

// DeleteTopicFromNamesrvRequestHeader is the header of
// DELETE_TOPIC_IN_NAMESRV (216): ext topic (required) and clusterName
// (optional, written only when set: the topic leaves that cluster's
// groups only).
type DeleteTopicFromNamesrvRequestHeader struct {
	Topic       string
	ClusterName string
}

// Encode returns the ext fields; clusterName only when set.
func (h *DeleteTopicFromNamesrvRequestHeader) Encode() map[string]string {
	ext := map[string]string{"topic": h.Topic}
	if h.ClusterName != "" {
		ext["clusterName"] = h.ClusterName
	}
	return ext
}

// Decode reads the ext fields; a missing topic wraps
// remoting.ErrMissingField.
func (h *DeleteTopicFromNamesrvRequestHeader) Decode(ext map[string]string) error {
	r := extReader{header: "DELETE_TOPIC_IN_NAMESRV request header", ext: ext}
	out := DeleteTopicFromNamesrvRequestHeader{Topic: r.str("topic", true), ClusterName: r.str("clusterName", false)}
	if r.err != nil {
		return r.err
	}
	*h = out
	return nil
}

// Request returns the DELETE_TOPIC_IN_NAMESRV request.
func (h *DeleteTopicFromNamesrvRequestHeader) Request() *remoting.Command {
	return remoting.NewRequest(remoting.DeleteTopicInNamesrv, h.Encode(), nil)
}

// DeleteSubscriptionGroupRequestHeader is the header of
// DELETE_SUBSCRIPTIONGROUP (207): ext groupName (required) and
// cleanOffset (our admin writes true; the broker drops the group's
// offsets with the group either way).
type DeleteSubscriptionGroupRequestHeader struct {
	GroupName   string
	CleanOffset bool
}

// Encode returns the ext fields, every field written.
func (h *DeleteSubscriptionGroupRequestHeader) Encode() map[string]string {
	return map[string]string{"groupName": h.GroupName, "cleanOffset": boolString(h.CleanOffset)}
}

// Decode reads the ext fields; a missing groupName wraps
// remoting.ErrMissingField.
func (h *DeleteSubscriptionGroupRequestHeader) Decode(ext map[string]string) error {
	r := extReader{header: "DELETE_SUBSCRIPTIONGROUP request header", ext: ext}
	out := DeleteSubscriptionGroupRequestHeader{GroupName: r.str("groupName", true), CleanOffset: r.bool("cleanOffset")}
	if r.err != nil {
		return r.err
	}
	*h = out
	return nil
}

// Request returns the DELETE_SUBSCRIPTIONGROUP request.
func (h *DeleteSubscriptionGroupRequestHeader) Request() *remoting.Command {
	return remoting.NewRequest(remoting.DeleteSubscriptionGroup, h.Encode(), nil)
}

// GetSubscriptionGroupConfigRequestHeader is the header of
// GET_SUBSCRIPTIONGROUP_CONFIG (352): ext group (required). The answer is
// the group's config as JSON, or SUBSCRIPTION_GROUP_NOT_EXIST.
type GetSubscriptionGroupConfigRequestHeader struct {
	Group string
}

// Encode returns the ext fields.
func (h *GetSubscriptionGroupConfigRequestHeader) Encode() map[string]string {
	return map[string]string{"group": h.Group}
}

// Decode reads the ext fields; a missing group wraps
// remoting.ErrMissingField.
func (h *GetSubscriptionGroupConfigRequestHeader) Decode(ext map[string]string) error {
	r := extReader{header: "GET_SUBSCRIPTIONGROUP_CONFIG request header", ext: ext}
	out := GetSubscriptionGroupConfigRequestHeader{Group: r.str("group", true)}
	if r.err != nil {
		return r.err
	}
	*h = out
	return nil
}

// Request returns the GET_SUBSCRIPTIONGROUP_CONFIG request.
func (h *GetSubscriptionGroupConfigRequestHeader) Request() *remoting.Command {
	return remoting.NewRequest(remoting.GetSubscriptionGroupConfig, h.Encode(), nil)
}

// GetTopicsByClusterRequestHeader is the header of GET_TOPICS_BY_CLUSTER
// (224), sent to a name server: ext cluster (required). The answer's body
// is a TopicList of the topics the cluster's broker groups serve.
type GetTopicsByClusterRequestHeader struct {
	Cluster string
}

// Encode returns the ext fields.
func (h *GetTopicsByClusterRequestHeader) Encode() map[string]string {
	return map[string]string{"cluster": h.Cluster}
}

// Decode reads the ext fields; a missing cluster wraps
// remoting.ErrMissingField.
func (h *GetTopicsByClusterRequestHeader) Decode(ext map[string]string) error {
	r := extReader{header: "GET_TOPICS_BY_CLUSTER request header", ext: ext}
	out := GetTopicsByClusterRequestHeader{Cluster: r.str("cluster", true)}
	if r.err != nil {
		return r.err
	}
	*h = out
	return nil
}

// Request returns the GET_TOPICS_BY_CLUSTER request.
func (h *GetTopicsByClusterRequestHeader) Request() *remoting.Command {
	return remoting.NewRequest(remoting.GetTopicsByCluster, h.Encode(), nil)
}
