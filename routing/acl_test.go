package routing

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ledgermq/ledgermq/auth"
	"github.com/ledgermq/ledgermq/remoting"
)

// testACL is the name server's plain_acl.yml in these tests: a broker's
// account, an application's, and an admin.
const testACL = `
accounts:
  - accessKey: broker-node
    secretKey: broker-secret
  - accessKey: app-user
    secretKey: app-secret
    defaultTopicPerm: PUB|SUB
  - accessKey: ops-admin
    secretKey: ops-secret
    admin: true
`

var (
	brokerAccount = auth.Credentials{AccessKey: "broker-node", SecretKey: "broker-secret"}
	appAccount    = auth.Credentials{AccessKey: "app-user", SecretKey: "app-secret"}
	adminAccount  = auth.Credentials{AccessKey: "ops-admin", SecretKey: "ops-secret"}
)

// writeACL writes an ACL file into a temporary directory of t.
func writeACL(t testing.TB, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "plain_acl.yml")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// startACLServer starts a name server with its ACL on (and secret, if
// set) on a manual clock.
func startACLServer(t testing.TB, secret string) (*Server, *ManualClock) {
	t.Helper()
	return startServer(t, Config{ACLEnable: true, ACLFile: writeACL(t, testACL), Secret: secret})
}

// aclRequest is a well-formed request of each code the name server
// serves, unsigned: what an open request needs to succeed.
func aclRequest(t testing.TB, code int32) *remoting.Command {
	t.Helper()
	switch code {
	case remoting.RegisterBroker:
		cmd, err := RegisterCommand(brokerReq(1, 0, 1, topic("T", 4)))
		if err != nil {
			t.Fatal(err)
		}
		return cmd
	case remoting.UnregisterBroker:
		cmd, err := UnregisterCommand(UnregisterRequest{ClusterName: "DefaultCluster", BrokerName: "broker-a", BrokerAddr: addr(1)})
		if err != nil {
			t.Fatal(err)
		}
		return cmd
	case remoting.GetRouteInfoByTopic, remoting.DeleteTopicInNamesrv:
		return remoting.NewRequest(code, map[string]string{"topic": "T"}, nil)
	case remoting.GetTopicsByCluster:
		return remoting.NewRequest(code, map[string]string{"cluster": "DefaultCluster"}, nil)
	}
	return remoting.NewRequest(code, map[string]string{}, nil)
}

func send(t testing.TB, c *remoting.Client, ns string, req *remoting.Command) *remoting.Command {
	t.Helper()
	resp, err := c.Invoke(ctxGuard(t), ns, req)
	if err != nil {
		t.Fatalf("%s: %v", remoting.RequestCodeName(req.Code), err)
	}
	return resp
}

func wantNoPermission(t testing.TB, what string, r *remoting.Command, remark string) {
	t.Helper()
	if r.Code != remoting.NoPermission || !strings.Contains(r.Remark, remark) {
		t.Errorf("%s: %d %q, want NO_PERMISSION naming %q", what, r.Code, r.Remark, remark)
	}
}

// TestACLRefusesEveryUnsignedRequest sends every request code the name
// server serves unsigned, wrongly signed and signed by an unknown account
// to a name server with its ACL on: each is NO_PERMISSION naming what was
// refused, except exactly the route and KV configuration reads, which are
// open unsigned.
func TestACLRefusesEveryUnsignedRequest(t *testing.T) {
	for _, secret := range []string{"", testSecret} {
		t.Run("secret="+map[bool]string{true: "set", false: "none"}[secret != ""], func(t *testing.T) {
			s, _ := startACLServer(t, secret)
			ns := s.Addr().String()
			c := newClient(t)
			codes := make([]int32, 0, len(aclTable))
			for code := range aclTable {
				codes = append(codes, code)
			}
			slices.Sort(codes)
			if want := []int32{remoting.PutKVConfig, remoting.GetKVConfig, remoting.DeleteKVConfig,
				remoting.RegisterBroker, remoting.UnregisterBroker, remoting.GetRouteInfoByTopic,
				remoting.GetBrokerClusterInfo, remoting.WipeWritePermOfBroker, remoting.GetAllTopicListFromNameServer,
				remoting.DeleteTopicInNamesrv, remoting.GetKVListByNamespace, remoting.GetTopicsByCluster,
				remoting.GetSystemTopicListFromNS, remoting.AddWritePermOfBroker}; !slices.Equal(codes, want) {
				t.Fatalf("served codes %v, want %v", codes, want)
			}
			var open []int32
			for _, code := range codes {
				name := remoting.RequestCodeName(code)
				r := send(t, c, ns, aclRequest(t, code))
				if r.Code != remoting.NoPermission {
					open = append(open, code)
				} else if !strings.Contains(r.Remark, "no accessKey in "+name) {
					t.Errorf("unsigned %s: remark %q", name, r.Remark)
				}

				req := aclRequest(t, code)
				auth.Sign(req.ExtFields, req.Body, auth.Credentials{AccessKey: adminAccount.AccessKey, SecretKey: "not-the-secret"})
				wantNoPermission(t, "wrongly signed "+name, send(t, c, ns, req), "signature of "+name+" for accessKey ops-admin")

				req = aclRequest(t, code)
				auth.Sign(req.ExtFields, req.Body, auth.Credentials{AccessKey: "nobody1", SecretKey: "whatever"})
				wantNoPermission(t, "unknown account "+name, send(t, c, ns, req), "no account for accessKey nobody1")

				req = aclRequest(t, code)
				req.ExtFields[auth.FieldSignature] = "AAAA"
				wantNoPermission(t, "signature without an access key "+name, send(t, c, ns, req), "no accessKey in "+name)
			}
			if want := []int32{remoting.GetKVConfig, remoting.GetRouteInfoByTopic, remoting.GetBrokerClusterInfo,
				remoting.GetAllTopicListFromNameServer, remoting.GetKVListByNamespace, remoting.GetTopicsByCluster,
				remoting.GetSystemTopicListFromNS}; !slices.Equal(open, want) {
				t.Fatalf("open unsigned: %v, want exactly the route and KV reads %v", open, want)
			}
			if len(s.Table().Members()) != 0 {
				t.Fatalf("a refused registration changed routes: %+v", s.Table().Members())
			}

			// Signed route reads: any account; admin requests: admin only.
			for _, creds := range []auth.Credentials{appAccount, brokerAccount} {
				req := aclRequest(t, remoting.GetBrokerClusterInfo)
				auth.Sign(req.ExtFields, req.Body, creds)
				if r := send(t, c, ns, req); r.Code != remoting.Success {
					t.Fatalf("cluster info signed by %s: %d %s", creds.AccessKey, r.Code, r.Remark)
				}
				req = aclRequest(t, remoting.DeleteTopicInNamesrv)
				auth.Sign(req.ExtFields, req.Body, creds)
				wantNoPermission(t, "delete topic by "+creds.AccessKey, send(t, c, ns, req),
					"DELETE_TOPIC_IN_NAMESRV needs an admin account, accessKey "+creds.AccessKey+" is not one")
			}
			req := aclRequest(t, remoting.DeleteTopicInNamesrv)
			auth.Sign(req.ExtFields, req.Body, adminAccount)
			if r := send(t, c, ns, req); r.Code != remoting.Success {
				t.Fatalf("delete topic by the admin: %d %s", r.Code, r.Remark)
			}
		})
	}
}

// TestACLRegistrations: with the ACL on, a registration needs a fresh
// signature of an account, and with a cluster secret also the secret's.
func TestACLRegistrations(t *testing.T) {
	t.Run("account", func(t *testing.T) {
		s, clock := startACLServer(t, "")
		ns := s.Addr().String()
		c := newClient(t)

		// Forged: no credentials, the cluster's key without an account.
		err := RegisterBroker(ctxGuard(t), c, ns, brokerReq(1, 0, 1, topic("T", 4)))
		wantErr(t, err, ErrUnauthenticated)
		if !strings.Contains(err.Error(), "no accessKey in REGISTER_BROKER") {
			t.Errorf("unsigned registration: %v", err)
		}
		forged := brokerReq(1, 0, 1, topic("T", 4))
		forged.Secret = testSecret
		if err := RegisterBroker(ctxGuard(t), c, ns, forged); !strings.Contains(fmtErr(err), "no account for accessKey "+auth.ClusterAccessKey) {
			t.Errorf("registration signed with a secret the name server does not have: %v", err)
		}
		if st := s.Stats(); st.Refused != 2 || st.Registrations != 0 {
			t.Errorf("stats after two refusals: %+v", st)
		}

		// Signed by an account: accepted, once.
		req := brokerReq(1, 0, 1, topic("T", 4))
		req.Credentials, req.SignTime = brokerAccount, clock.Now()
		cmd, err := RegisterCommand(req)
		if err != nil {
			t.Fatal(err)
		}
		if r := send(t, c, ns, cmd); r.Code != remoting.Success {
			t.Fatalf("registration signed by an account: %d %s", r.Code, r.Remark)
		}
		waitRoute(t, c, ns, "T")
		wantNoPermission(t, "replayed registration", send(t, c, ns, cmd), "replayed")
		stale := req
		stale.SignTime = clock.Now().Add(-time.Hour)
		cmd, err = RegisterCommand(stale)
		if err != nil {
			t.Fatal(err)
		}
		wantNoPermission(t, "stale registration", send(t, c, ns, cmd), "outside the accepted window")

		// Unregistration: an account's fresh signature too.
		u := UnregisterRequest{ClusterName: "DefaultCluster", BrokerName: "broker-a", BrokerAddr: addr(1)}
		if err := UnregisterBroker(ctxGuard(t), c, ns, u); err == nil || !strings.Contains(err.Error(), "no accessKey in UNREGISTER_BROKER") {
			t.Fatalf("unsigned unregistration: %v", err)
		}
		mustRoute(t, c, ns, "T")
		u.Credentials, u.SignTime = brokerAccount, clock.Now()
		if err := UnregisterBroker(ctxGuard(t), c, ns, u); err != nil {
			t.Fatal(err)
		}
		if r := routeOf(t, c, ns, "T"); r.Code != remoting.TopicNotExist {
			t.Fatalf("route after the signed unregistration: %d", r.Code)
		}
	})

	t.Run("account and secret", func(t *testing.T) {
		s, clock := startACLServer(t, testSecret)
		ns := s.Addr().String()
		c := newClient(t)
		onlySecret := brokerReq(1, 0, 1, topic("T", 4))
		onlySecret.Secret, onlySecret.SignTime = testSecret, clock.Now()
		if err := RegisterBroker(ctxGuard(t), c, ns, onlySecret); !strings.Contains(fmtErr(err), "no account for accessKey "+auth.ClusterAccessKey) {
			t.Errorf("registration signed with the secret only: %v", err)
		}
		onlyAccount := brokerReq(1, 0, 1, topic("T", 4))
		onlyAccount.Credentials, onlyAccount.SignTime = brokerAccount, clock.Now()
		err := RegisterBroker(ctxGuard(t), c, ns, onlyAccount)
		wantErr(t, err, ErrUnauthenticated)
		wrongSecret := onlyAccount
		wrongSecret.Secret = "another-secret-of-32-bytes-000000"
		wantErr(t, RegisterBroker(ctxGuard(t), c, ns, wrongSecret), ErrUnauthenticated)
		if len(s.Table().Members()) != 0 {
			t.Fatalf("refused registrations changed routes: %+v", s.Table().Members())
		}
		both := onlyAccount
		both.Secret = testSecret
		if err := RegisterBroker(ctxGuard(t), c, ns, both); err != nil {
			t.Fatalf("registration signed by an account and the secret: %v", err)
		}
		waitRoute(t, c, ns, "T")
	})

	t.Run("secret without the ACL", func(t *testing.T) {
		// A name server without the ACL checks the cluster signature of a
		// registration an account signed too.
		s, clock := startServer(t, Config{Secret: testSecret})
		ns := s.Addr().String()
		c := newClient(t)
		both := brokerReq(1, 0, 1, topic("T", 4))
		both.Secret, both.Credentials, both.SignTime = testSecret, brokerAccount, clock.Now()
		if err := RegisterBroker(ctxGuard(t), c, ns, both); err != nil {
			t.Fatal(err)
		}
		waitRoute(t, c, ns, "T")
	})
}

// waitRoute waits until the name server routes topic (a registration is
// applied once its node is confirmed, on a worker).
func waitRoute(t testing.TB, c *remoting.Client, ns, topic string) {
	t.Helper()
	waitFor(t, "route of "+topic, func() bool { return routeOf(t, c, ns, topic).Code == remoting.Success })
}

func fmtErr(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}

// TestACLReload: a changed file is read again; one that no longer parses
// keeps the previous rules.
func TestACLReload(t *testing.T) {
	path := writeACL(t, testACL)
	s := launchServer(t, Config{Addr: "127.0.0.1:0", Checker: trustAll, ACLEnable: true, ACLFile: path, ACLReloadInterval: 10 * time.Millisecond})
	ns := s.Addr().String()
	c := newClient(t)
	late := auth.Credentials{AccessKey: "late-user", SecretKey: "late-secret"}
	signedInfo := func() *remoting.Command {
		req := aclRequest(t, remoting.GetBrokerClusterInfo)
		auth.Sign(req.ExtFields, req.Body, late)
		return send(t, c, ns, req)
	}
	wantNoPermission(t, "an account not in the file yet", signedInfo(), "no account for accessKey late-user")
	if err := os.WriteFile(path, []byte(testACL+"  - accessKey: late-user\n    secretKey: late-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the added account is accepted", func() bool { return signedInfo().Code == remoting.Success })

	if err := os.WriteFile(path, []byte("accounts: [ {accessKey: x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if changed, err := s.aclFile.Reload(); changed || err == nil {
		t.Fatalf("reload of a broken file: changed %v, error %v", changed, err)
	}
	if r := signedInfo(); r.Code != remoting.Success {
		t.Fatalf("after a broken file: %d %s, want the previous rules", r.Code, r.Remark)
	}
}

func TestACLConfig(t *testing.T) {
	if err := (Config{ACLEnable: true}).Validate(); err == nil {
		t.Error("ACLEnable without a file accepted")
	}
	if err := (Config{ACLFile: "x.yml"}).Validate(); err == nil {
		t.Error("an ACL file without ACLEnable accepted")
	}
	if _, err := NewServer(Config{Addr: "127.0.0.1:0", ACLEnable: true, ACLFile: writeACL(t, "accounts: [ {accessKey: x")}); err == nil {
		t.Error("a name server started with a broken ACL file")
	}
}

// BenchmarkRouteOverTCPACL is BenchmarkRouteOverTCP with the ACL off, on
// with unsigned reads (open), and on with reads signed by an account (the
// signature verified on every request): the cost of the check.
func BenchmarkRouteOverTCPACL(b *testing.B) {
	for _, mode := range []string{"off", "on-unsigned", "on-signed"} {
		b.Run(mode, func(b *testing.B) {
			cfg := Config{}
			if mode != "off" {
				cfg.ACLEnable, cfg.ACLFile = true, writeACL(b, testACL)
			}
			s, clock := startServer(b, cfg)
			ns := s.Addr().String()
			c := newClient(b)
			var regs []RegisterRequest
			for i, r := range []RegisterRequest{brokerReq(0, 0, 1, benchTopics(100)...), brokerReq(1, 1, 1), brokerReq(2, 2, 1)} {
				r.Credentials, r.SignTime = brokerAccount, clock.Now().Add(time.Duration(i)*time.Millisecond)
				regs = append(regs, r)
			}
			registerAll(b, s, c, regs...)
			req := remoting.NewRequest(remoting.GetRouteInfoByTopic, map[string]string{"topic": "topic-00050"}, nil)
			if mode == "on-signed" {
				auth.Sign(req.ExtFields, nil, appAccount)
			}
			ctx := ctxGuard(b)
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					resp, err := c.Invoke(ctx, ns, req)
					if err != nil || resp.Code != remoting.Success {
						b.Fatalf("%v %v", resp, err)
					}
				}
			})
		})
	}
}
