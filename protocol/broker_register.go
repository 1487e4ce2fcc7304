package protocol

import "github.com/ledgermq/ledgermq/remoting"

// The headers of REGISTER_BROKER (103) and UNREGISTER_BROKER (104),
// broker → name server. The body of 103 is RegisterBrokerBody
// (register.go). With a cluster secret the sender signs the ext fields
// Encode returns (package auth), so Encode writes exactly the fields the
// name server verifies; the name server checks ranges and identity
// (package routing).

// RegisterBrokerRequestHeader is the header of REGISTER_BROKER (103).
//
//	field                   ext name                required  notes
//	----------------------  ----------------------  --------  ------------------------------------
//	ClusterName             clusterName             yes
//	BrokerName              brokerName              yes
//	BrokerAddr              brokerAddr              yes
//	BrokerID                brokerId                yes       0 = the Raft leader
//	HAServerAddr            haServerAddr            yes
//	EnableActingMaster      enableActingMaster                always false from our brokers
//	Compressed              compressed                        the body's form
//	BodyCRC32               bodyCrc32                         0: unchecked; when present, non-empty
//	HeartbeatTimeoutMillis  heartbeatTimeoutMillis            written only when non-zero; when
//	                                                          present, non-empty
type RegisterBrokerRequestHeader struct {
	ClusterName            string
	BrokerName             string
	BrokerAddr             string
	BrokerID               int64
	HAServerAddr           string
	EnableActingMaster     bool
	Compressed             bool
	BodyCRC32              int32
	HeartbeatTimeoutMillis int64
}

// Encode returns the ext fields; heartbeatTimeoutMillis only when set.
func (h *RegisterBrokerRequestHeader) Encode() map[string]string {
	ext := map[string]string{
		"brokerName":         h.BrokerName,
		"brokerAddr":         h.BrokerAddr,
		"clusterName":        h.ClusterName,
		"haServerAddr":       h.HAServerAddr,
		"brokerId":           itoa64(h.BrokerID),
		"enableActingMaster": boolString(h.EnableActingMaster),
		"compressed":         boolString(h.Compressed),
		"bodyCrc32":          itoa32(h.BodyCRC32),
	}
	if h.HeartbeatTimeoutMillis != 0 {
		ext["heartbeatTimeoutMillis"] = itoa64(h.HeartbeatTimeoutMillis)
	}
	return ext
}

// Decode reads the ext fields. A missing required field wraps
// remoting.ErrMissingField, a malformed number (or an empty bodyCrc32 or
// heartbeatTimeoutMillis) remoting.ErrBadHeader or ErrMissingField.
func (h *RegisterBrokerRequestHeader) Decode(ext map[string]string) error {
	r := extReader{header: "REGISTER_BROKER request header", ext: ext}
	_, hasCRC := ext["bodyCrc32"]
	_, hasTimeout := ext["heartbeatTimeoutMillis"]
	out := RegisterBrokerRequestHeader{
		ClusterName:            r.str("clusterName", true),
		BrokerName:             r.str("brokerName", true),
		BrokerAddr:             r.str("brokerAddr", true),
		BrokerID:               r.int64("brokerId", true),
		HAServerAddr:           r.str("haServerAddr", true),
		EnableActingMaster:     r.bool("enableActingMaster"),
		Compressed:             r.bool("compressed"),
		BodyCRC32:              r.int32("bodyCrc32", hasCRC),
		HeartbeatTimeoutMillis: r.int64("heartbeatTimeoutMillis", hasTimeout),
	}
	if r.err != nil {
		return r.err
	}
	*h = out
	return nil
}

// Request returns the REGISTER_BROKER request with body. A signed
// request is built from Encode's map instead (the signature joins it).
func (h *RegisterBrokerRequestHeader) Request(body []byte) *remoting.Command {
	return remoting.NewRequest(remoting.RegisterBroker, h.Encode(), body)
}

// RegisterBrokerResponseHeader is the header of REGISTER_BROKER's answer:
// masterAddr and haServerAddr, both written only when the name server
// knows the group's leader and the registering node is a follower.
type RegisterBrokerResponseHeader struct {
	MasterAddr   string
	HAServerAddr string
}

// Encode returns the ext fields: none when MasterAddr is empty.
func (h *RegisterBrokerResponseHeader) Encode() map[string]string {
	if h.MasterAddr == "" {
		return nil
	}
	return map[string]string{"masterAddr": h.MasterAddr, "haServerAddr": h.HAServerAddr}
}

// Decode reads the ext fields; both are optional.
func (h *RegisterBrokerResponseHeader) Decode(ext map[string]string) error {
	r := extReader{header: "REGISTER_BROKER response header", ext: ext}
	out := RegisterBrokerResponseHeader{MasterAddr: r.str("masterAddr", false), HAServerAddr: r.str("haServerAddr", false)}
	if out.MasterAddr == "" {
		out.HAServerAddr = ""
	}
	*h = out
	return nil
}

// UnregisterBrokerRequestHeader is the header of UNREGISTER_BROKER (104):
// the member of BrokerName at BrokerAddr leaves. All four fields are
// required.
type UnregisterBrokerRequestHeader struct {
	ClusterName string
	BrokerName  string
	BrokerAddr  string
	BrokerID    int64
}

// Encode returns the ext fields, every field written.
func (h *UnregisterBrokerRequestHeader) Encode() map[string]string {
	return map[string]string{
		"brokerName":  h.BrokerName,
		"brokerAddr":  h.BrokerAddr,
		"clusterName": h.ClusterName,
		"brokerId":    itoa64(h.BrokerID),
	}
}

// Decode reads the ext fields. A missing field wraps
// remoting.ErrMissingField, a malformed brokerId remoting.ErrBadHeader.
func (h *UnregisterBrokerRequestHeader) Decode(ext map[string]string) error {
	r := extReader{header: "UNREGISTER_BROKER request header", ext: ext}
	out := UnregisterBrokerRequestHeader{
		ClusterName: r.str("clusterName", true),
		BrokerName:  r.str("brokerName", true),
		BrokerAddr:  r.str("brokerAddr", true),
		BrokerID:    r.int64("brokerId", true),
	}
	if r.err != nil {
		return r.err
	}
	*h = out
	return nil
}
