package routing

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ledgermq/ledgermq/auth"
	"github.com/ledgermq/ledgermq/protocol"
	"github.com/ledgermq/ledgermq/remoting"
)

// The broker's side of the name-server protocol: the requests a broker
// sends to every name server, built exactly as Java's BrokerOuterAPI
// builds them.

// RegisterRequest is what a broker node tells a name server about itself.
// A node registers only once it knows its role (I6): as the leader with
// BrokerID 0, or as a follower with its own id ≥ 1.
type RegisterRequest struct {
	ClusterName  string
	BrokerName   string // the broker group, shared by all its nodes
	BrokerAddr   string // host:port clients dial
	HAServerAddr string // sent as is (Java requires the field)
	BrokerID     int64  // 0 = leader, ≥ 1 = follower
	// Term is the node's current Raft term. It travels as
	// dataVersion.stateVersion and fences deposed leaders.
	Term int64
	// DataVersion versions Topics: change Timestamp or Counter whenever
	// the topic table changes, or the name server keeps the topics it
	// has. Its StateVersion is replaced by Term.
	DataVersion protocol.DataVersion
	// Topics is the node's whole topic table (a leader's replaces the
	// group's; a follower's is ignored by the name server).
	Topics []protocol.TopicConfig
	// HeartbeatTimeout, if positive, is sent as heartbeatTimeoutMillis:
	// how long the name server keeps the node without a heartbeat.
	HeartbeatTimeout time.Duration
	// Compressed sends the deflated body layout instead of JSON.
	Compressed bool
	// Secret, when set, is the cluster secret the request is signed with
	// (auth.SignFresh with auth.Cluster(Secret)); SignTime is the time
	// signed in (zero: now).
	Secret   string
	SignTime time.Time
	// Credentials, when set, are the account of the name servers' ACL the
	// request is signed with (fresh, as with Secret; with a Secret too,
	// the cluster signature moves to its own field, doc.go).
	Credentials auth.Credentials
}

// RegisterCommand builds the REGISTER_BROKER request for req: the ext
// fields brokerName, brokerAddr, clusterName, haServerAddr, brokerId,
// enableActingMaster=false, compressed, bodyCrc32 (and
// heartbeatTimeoutMillis when set), and a RegisterBrokerBody; with a
// Secret also AccessKey, SignTime, SignNonce and Signature (package auth).
// A signed command is accepted once per name server: build one for each.
// Errors wrap ErrBadRequest (invalid identity, duplicate or invalid
// topics).
func RegisterCommand(req RegisterRequest) (*remoting.Command, error) {
	table := make(map[string]protocol.TopicConfig, len(req.Topics))
	for _, tc := range req.Topics {
		if _, dup := table[tc.TopicName]; dup {
			return nil, fmt.Errorf("%w: topic %q listed twice", ErrBadRequest, tc.TopicName)
		}
		if tc.TopicFilterType == "" {
			tc.TopicFilterType = protocol.FilterSingleTag
		}
		table[tc.TopicName] = tc
	}
	dv := req.DataVersion
	dv.StateVersion = req.Term
	check := Registration{
		ClusterName: req.ClusterName, BrokerName: req.BrokerName, BrokerAddr: req.BrokerAddr,
		BrokerID: req.BrokerID, DataVersion: dv, Topics: table, Timeout: req.HeartbeatTimeout,
	}
	if err := check.validate(); err != nil {
		return nil, badRequest(err)
	}
	body := &protocol.RegisterBrokerBody{
		TopicConfigSerializeWrapper: protocol.TopicConfigWrapper{TopicConfigTable: table, DataVersion: dv},
	}
	raw, err := body.Encode(req.Compressed)
	if err != nil {
		return nil, badRequest(err)
	}
	h := protocol.RegisterBrokerRequestHeader{
		ClusterName:  req.ClusterName,
		BrokerName:   req.BrokerName,
		BrokerAddr:   req.BrokerAddr,
		BrokerID:     req.BrokerID,
		HAServerAddr: req.HAServerAddr,
		Compressed:   req.Compressed,
		BodyCRC32:    int32(bodyCRC32(raw)), // the sign bit is clear
	}
	if req.HeartbeatTimeout > 0 {
		h.HeartbeatTimeoutMillis = req.HeartbeatTimeout.Milliseconds()
	}
	ext := h.Encode()
	if err := signRequest(ext, raw, req.Secret, req.Credentials, req.SignTime); err != nil {
		return nil, err
	}
	return remoting.NewRequest(remoting.RegisterBroker, ext, raw), nil
}

// signRequest signs ext and body with the cluster secret and the account
// that are set: the secret alone as auth.ClusterAccessKey, the account
// alone as itself, both with the cluster signature moved to extClusterSig
// and the account signing over it (so the name server checks each).
func signRequest(ext map[string]string, body []byte, secret string, creds auth.Credentials, at time.Time) error {
	if secret == "" && creds.AccessKey == "" {
		return nil
	}
	if at.IsZero() {
		at = time.Now()
	}
	if secret == "" {
		return auth.SignFresh(ext, body, creds, at)
	}
	if err := auth.SignFresh(ext, body, auth.Cluster(secret), at); err != nil {
		return err
	}
	if creds.AccessKey != "" {
		ext[extClusterSig] = ext[auth.FieldSignature]
		delete(ext, auth.FieldSignature)
		auth.Sign(ext, body, creds)
	}
	return nil
}

// RegisterBroker registers (or heartbeats) the node with the name server
// at namesrvAddr over client and waits for the answer; ctx bounds the
// call. A registration refused by fencing returns an error matching
// ErrStaleTerm: the node's term is behind, so it is no longer the leader
// it claims to be; one refused for its signature (NO_PERMISSION) matches
// ErrUnauthenticated. Other refusals return the *remoting.CodeError. An
// accepted registration may still wait for the name server to confirm it
// with the node (doc.go, Confirmation). Safe
// for concurrent use; a broker calls it for each name server every 30 s
// and at once on a role or topic change.
func RegisterBroker(ctx context.Context, client *remoting.Client, namesrvAddr string, req RegisterRequest) error {
	cmd, err := RegisterCommand(req)
	if err != nil {
		return err
	}
	resp, err := client.Invoke(ctx, namesrvAddr, cmd)
	if err != nil {
		return fmt.Errorf("routing: register %s id %d with %s: %w", req.BrokerName, req.BrokerID, namesrvAddr, err)
	}
	switch resp.Code {
	case codeStaleTerm:
		return fmt.Errorf("%w: %s: %w", ErrStaleTerm, namesrvAddr, remoting.CheckResponse(resp))
	case codeRefused:
		return fmt.Errorf("%w: %s: %w", ErrUnauthenticated, namesrvAddr, remoting.CheckResponse(resp))
	}
	if err := remoting.CheckResponse(resp); err != nil {
		return fmt.Errorf("routing: register %s id %d with %s: %w", req.BrokerName, req.BrokerID, namesrvAddr, err)
	}
	return nil
}

// UnregisterRequest names the node leaving: the name server removes the
// member of BrokerName registered at BrokerAddr.
type UnregisterRequest struct {
	ClusterName string
	BrokerName  string
	BrokerAddr  string
	BrokerID    int64
	// Secret, SignTime and Credentials sign the request as
	// RegisterRequest's do.
	Secret      string
	SignTime    time.Time
	Credentials auth.Credentials
}

// UnregisterCommand builds the UNREGISTER_BROKER request for req (signed
// when req.Secret is set).
func UnregisterCommand(req UnregisterRequest) (*remoting.Command, error) {
	h := protocol.UnregisterBrokerRequestHeader{ClusterName: req.ClusterName, BrokerName: req.BrokerName,
		BrokerAddr: req.BrokerAddr, BrokerID: req.BrokerID}
	ext := h.Encode()
	if err := signRequest(ext, nil, req.Secret, req.Credentials, req.SignTime); err != nil {
		return nil, err
	}
	return remoting.NewRequest(remoting.UnregisterBroker, ext, nil), nil
}

// UnregisterBroker tells the name server at namesrvAddr that the node is
// leaving (UNREGISTER_BROKER), so clients stop being routed to it before
// its connection closes. The name server honours it only on the
// connection the node registered on, or signed with the cluster secret.
// Safe for concurrent use.
func UnregisterBroker(ctx context.Context, client *remoting.Client, namesrvAddr string, req UnregisterRequest) error {
	cmd, err := UnregisterCommand(req)
	if err != nil {
		return err
	}
	resp, err := client.Invoke(ctx, namesrvAddr, cmd)
	if err == nil {
		err = remoting.CheckResponse(resp)
	}
	if err != nil {
		return fmt.Errorf("routing: unregister %s id %d from %s: %w", req.BrokerName, req.BrokerID, namesrvAddr, err)
	}
	return nil
}

// badRequest wraps err in ErrBadRequest unless it already is one.
func badRequest(err error) error {
	if errors.Is(err, ErrBadRequest) {
		return err
	}
	return fmt.Errorf("%w: %w", ErrBadRequest, err)
}
