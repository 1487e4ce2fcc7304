package protocol

import "github.com/ledgermq/ledgermq/remoting"

// The name server's KV configuration and its admin requests on brokers'
// write permission (admin → namesrv):
//
//	code  request                    header                             answer
//	----  -------------------------  ---------------------------------  -------------------------------------------
//	100   PUT_KV_CONFIG              KVConfigRequestHeader (value too)  none
//	101   GET_KV_CONFIG              KVConfigRequestHeader              GetKVConfigResponseHeader, or 22 not found
//	102   DELETE_KV_CONFIG           KVConfigRequestHeader              none
//	219   GET_KVLIST_BY_NAMESPACE    GetKVListByNamespaceRequestHeader  body KVTable, or 22 not found
//	205   WIPE_WRITE_PERM_OF_BROKER  BrokerPermRequestHeader            WritePermResponseHeader (wipeTopicCount)
//	327   ADD_WRITE_PERM_OF_BROKER   BrokerPermRequestHeader            WritePermResponseHeader (addTopicCount)

// NamespaceOrderTopicConfig is the KV namespace of ordered topics' broker
// lists ("broker-a:4;broker-b:4" by topic), which GET_ROUTEINFO_BY_TOPIC
// answers as orderTopicConf (Java NamesrvUtil).
const NamespaceOrderTopicConfig = "ORDER_TOPIC_CONFIG"

// KVConfigRequestHeader is the header of PUT_KV_CONFIG (100, every field
// required), GET_KV_CONFIG (101) and DELETE_KV_CONFIG (102) (namespace
// and key required; value not sent).
type KVConfigRequestHeader struct {
	Namespace string
	Key       string
	Value     string
}

// Encode returns namespace and key, and value when set.
func (h *KVConfigRequestHeader) Encode() map[string]string {
	ext := map[string]string{"namespace": h.Namespace, "key": h.Key}
	if h.Value != "" {
		ext["value"] = h.Value
	}
	return ext
}

// Decode reads the ext fields; namespace and key are required. A missing
// field wraps remoting.ErrMissingField. It never panics.
func (h *KVConfigRequestHeader) Decode(ext map[string]string) error {
	r := extReader{header: "KV config request header", ext: ext}
	out := KVConfigRequestHeader{Namespace: r.str("namespace", true), Key: r.str("key", true), Value: r.str("value", false)}
	if r.err != nil {
		return r.err
	}
	*h = out
	return nil
}

// DecodePut is Decode for PUT_KV_CONFIG, where value is required too.
func (h *KVConfigRequestHeader) DecodePut(ext map[string]string) error {
	r := extReader{header: "PUT_KV_CONFIG request header", ext: ext}
	out := KVConfigRequestHeader{Namespace: r.str("namespace", true), Key: r.str("key", true), Value: r.str("value", true)}
	if r.err != nil {
		return r.err
	}
	*h = out
	return nil
}

// Request returns the request of code (100, 101 or 102).
func (h *KVConfigRequestHeader) Request(code int32) *remoting.Command {
	return remoting.NewRequest(code, h.Encode(), nil)
}

// GetKVConfigResponseHeader is the answer header of GET_KV_CONFIG.
type GetKVConfigResponseHeader struct {
	Value string
}

// Encode returns the ext fields.
func (h *GetKVConfigResponseHeader) Encode() map[string]string {
	return map[string]string{"value": h.Value}
}

// Decode reads the ext fields (value may be absent: empty). It never
// fails.
func (h *GetKVConfigResponseHeader) Decode(ext map[string]string) error {
	h.Value = ext["value"]
	return nil
}

// GetKVListByNamespaceRequestHeader is the header of
// GET_KVLIST_BY_NAMESPACE (219): ext namespace, required.
type GetKVListByNamespaceRequestHeader struct {
	Namespace string
}

// Encode returns the ext fields.
func (h *GetKVListByNamespaceRequestHeader) Encode() map[string]string {
	return map[string]string{"namespace": h.Namespace}
}

// Decode reads the ext fields. It never panics.
func (h *GetKVListByNamespaceRequestHeader) Decode(ext map[string]string) error {
	r := extReader{header: "GET_KVLIST_BY_NAMESPACE request header", ext: ext}
	ns := r.str("namespace", true)
	if r.err != nil {
		return r.err
	}
	h.Namespace = ns
	return nil
}

// Request returns the GET_KVLIST_BY_NAMESPACE request.
func (h *GetKVListByNamespaceRequestHeader) Request() *remoting.Command {
	return remoting.NewRequest(remoting.GetKVListByNamespace, h.Encode(), nil)
}

// The answer body of GET_KVLIST_BY_NAMESPACE is a KVTable (admin_stats.go).

// BrokerPermRequestHeader is the header of WIPE_WRITE_PERM_OF_BROKER
// (205) and ADD_WRITE_PERM_OF_BROKER (327): ext brokerName, required.
type BrokerPermRequestHeader struct {
	BrokerName string
}

// Encode returns the ext fields.
func (h *BrokerPermRequestHeader) Encode() map[string]string {
	return map[string]string{"brokerName": h.BrokerName}
}

// Decode reads the ext fields. It never panics.
func (h *BrokerPermRequestHeader) Decode(ext map[string]string) error {
	r := extReader{header: "write perm of broker request header", ext: ext}
	name := r.str("brokerName", true)
	if r.err != nil {
		return r.err
	}
	h.BrokerName = name
	return nil
}

// Request returns the request of code (205 or 327).
func (h *BrokerPermRequestHeader) Request(code int32) *remoting.Command {
	return remoting.NewRequest(code, h.Encode(), nil)
}

// Answer ext fields of the write-permission requests: how many topics'
// queues of the broker changed.
const (
	ExtWipeTopicCount = "wipeTopicCount" // WIPE_WRITE_PERM_OF_BROKER
	ExtAddTopicCount  = "addTopicCount"  // ADD_WRITE_PERM_OF_BROKER
)

// WritePermCountField is the answer's count field of code (205 or 327).
func WritePermCountField(code int32) string {
	if code == remoting.AddWritePermOfBroker {
		return ExtAddTopicCount
	}
	return ExtWipeTopicCount
}
