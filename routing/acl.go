package routing

// Access control on the name server (Config.ACLEnable; package acl
// decides, this file says what each request needs and keeps the file
// current). doc.go, "Access control", has the table and the reasons.

import (
	"context"
	"fmt"
	"time"

	"github.com/ledgermq/ledgermq/acl"
	"github.com/ledgermq/ledgermq/auth"
	"github.com/ledgermq/ledgermq/remoting"
)

// DefaultACLReloadInterval is how often the ACL file is looked at for
// changes (the broker's period too).
const DefaultACLReloadInterval = 3 * time.Second

// aclNeed is what a request needs from its sender with the ACL on.
type aclNeed uint8

const (
	// aclRead: open without credentials (RocketMQ's clients without an
	// account and the name server's own users ask for routes unsigned);
	// a request that carries credentials must carry valid ones.
	aclRead aclNeed = iota
	// aclAccount: a valid, fresh signature of an account (SignTime
	// within Config.SignWindow, not replayed): the writes brokers send.
	aclAccount
	// aclAdmin: a valid signature of an admin account.
	aclAdmin
)

// aclTable is what each request the name server serves needs. Every
// handler is installed through withACL, which refuses to install one
// whose code is missing here.
var aclTable = map[int32]aclNeed{
	remoting.RegisterBroker:                aclAccount,
	remoting.UnregisterBroker:              aclAccount,
	remoting.GetRouteInfoByTopic:           aclRead,
	remoting.GetBrokerClusterInfo:          aclRead,
	remoting.GetAllTopicListFromNameServer: aclRead,
	remoting.GetTopicsByCluster:            aclRead,
	remoting.GetSystemTopicListFromNS:      aclRead,
	remoting.DeleteTopicInNamesrv:          aclAdmin,
	remoting.PutKVConfig:                   aclAdmin,
	remoting.DeleteKVConfig:                aclAdmin,
	remoting.GetKVConfig:                   aclRead,
	remoting.GetKVListByNamespace:          aclRead,
	remoting.WipeWritePermOfBroker:         aclAdmin,
	remoting.AddWritePermOfBroker:          aclAdmin,
}

// extClusterSig carries the cluster secret's signature of a request an
// account signs too: AccessKey and Signature are then the account's, and
// the cluster signature covers every field but Signature as it was before
// the account signed (AccessKey auth.ClusterAccessKey).
const extClusterSig = "ledgermqClusterSig"

// withACL wraps h with the check of code's rule; with the ACL off it is h.
func (s *Server) withACL(code int32, h remoting.HandlerFunc) (remoting.HandlerFunc, error) {
	need, ok := aclTable[code]
	if !ok {
		return nil, fmt.Errorf("routing: no access rule for %s", remoting.RequestCodeName(code))
	}
	if s.aclFile == nil {
		return h, nil
	}
	name := remoting.RequestCodeName(code)
	return func(ctx context.Context, conn *remoting.Conn, req *remoting.Command) *remoting.Command {
		if err := s.checkACL(conn, req, name, need); err != nil {
			if code == remoting.RegisterBroker {
				s.counts.refused.Add(1)
			}
			s.limit.Warn(s.log, "acl-refused", "request refused by the ACL", "peer", conn.RemoteAddr(), "request", name, "error", err)
			return remoting.NewResponse(req, codeRefused, err.Error())
		}
		return h(ctx, conn, req)
	}, nil
}

// checkACL decides req before its header or body is parsed: who asks is
// settled first, so a request without valid credentials is NO_PERMISSION
// whatever else it carries.
func (s *Server) checkACL(conn *remoting.Conn, req *remoting.Command, name string, need aclNeed) error {
	_, hasKey := req.ExtFields[auth.FieldAccessKey]
	_, hasSig := req.ExtFields[auth.FieldSignature]
	if need == aclRead && !hasKey && !hasSig {
		return nil
	}
	rules := s.aclFile.Rules()
	r := acl.Request{RemoteAddr: conn.RemoteAddr().String(), Ext: req.ExtFields, Body: req.Body, Code: name, Admin: need == aclAdmin}
	acc, err := rules.Authenticate(r)
	if err != nil || acc == nil {
		return err
	}
	if need == aclAccount {
		if err := s.guard.Check(req.ExtFields, s.clock.Now()); err != nil {
			return fmt.Errorf("%w: %s for accessKey %s: %w", acl.ErrDenied, name, acc.AccessKey, err)
		}
	}
	return rules.Authorize(acc, r)
}

// clusterSigned is ext as the cluster secret signed it: for a request an
// account signed too, a copy with the cluster signature back in Signature
// and the cluster's access key; otherwise ext itself.
func clusterSigned(ext map[string]string) map[string]string {
	sig, ok := ext[extClusterSig]
	if !ok {
		return ext
	}
	out := make(map[string]string, len(ext))
	for k, v := range ext {
		if k != extClusterSig {
			out[k] = v
		}
	}
	out[auth.FieldAccessKey] = auth.ClusterAccessKey
	out[auth.FieldSignature] = sig
	return out
}

// aclReloadLoop re-reads the ACL file when it changes, until Close.
func (s *Server) aclReloadLoop(t Ticker) {
	defer s.wg.Done()
	defer t.Stop()
	for {
		select {
		case <-s.quit:
			return
		case <-t.C():
		}
		changed, err := s.aclFile.Reload()
		switch {
		case err != nil:
			s.limit.Warn(s.log, "acl-reload", "ACL file unusable; the previous rules stay", "file", s.aclFile.Path(), "error", err)
		case changed:
			s.log.Info("ACL reloaded", "file", s.aclFile.Path(), "accounts", s.aclFile.Rules().Accounts())
		}
	}
}
