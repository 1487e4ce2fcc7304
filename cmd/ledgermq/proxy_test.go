package main

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/ledgermq/ledgermq/broker/brokertest"
	"github.com/ledgermq/ledgermq/client"
	"github.com/ledgermq/ledgermq/grpcapi/v2pb"
)

// startProxyCmd runs `ledgermq proxy` with args (listening on port 0)
// until the test ends, and returns its gRPC address and, with --http, its
// metrics address, as it prints them.
func startProxyCmd(t *testing.T, args ...string) (grpcAddr, httpAddr string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	out := &syncBuffer{}
	cmd := newRootCmd()
	cmd.SetArgs(append([]string{"proxy", "--listen", "127.0.0.1:0", "--log-level", "error"}, args...))
	cmd.SetOut(out)
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("proxy exited with %v", err)
			}
		case <-time.After(20 * time.Second):
			t.Error("the proxy did not stop")
		}
	})
	listening := regexp.MustCompile(`proxy listening on (\S+) `)
	metrics := regexp.MustCompile(`proxy metrics on http://(\S+)/metrics`)
	wantHTTP := strings.Contains(strings.Join(args, " "), "--http")
	waitFor(t, 10*time.Second, "the proxy's addresses", func() bool {
		select {
		case err := <-done:
			t.Fatalf("proxy exited: %v\n%s", err, out.String())
		default:
		}
		s := out.String()
		if m := listening.FindStringSubmatch(s); m != nil {
			grpcAddr = m[1]
		}
		if m := metrics.FindStringSubmatch(s); m != nil {
			httpAddr = m[1]
		}
		return grpcAddr != "" && (httpAddr != "" || !wantHTTP)
	})
	return grpcAddr, httpAddr
}

// httpGet is the status and body of a GET of path at addr (0 and the
// error's text when it fails).
func httpGet(addr, path string) (int, string) {
	resp, err := http.Get("http://" + addr + path)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestProxyMetrics: `ledgermq proxy --http` serves /livez, /readyz and
// /metrics, whose gRPC call series (the nodes' names, labelled with the
// proxy) count a send (OK) and a route of an unknown topic
// (TOPIC_NOT_FOUND) answered through the proxy; promtool accepts them.
func TestProxyMetrics(t *testing.T) {
	tc := brokertest.StartNode(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	admin, err := client.NewAdmin(client.WithAdminNameServers(tc.NamesrvAddr()))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	if _, err := admin.CreateTopic(ctx, client.TopicConfig{Topic: "PMetrics", ReadQueues: 1, WriteQueues: 1}, client.Target{}); err != nil {
		t.Fatal(err)
	}
	grpcAddr, httpAddr := startProxyCmd(t, "-n", tc.NamesrvAddr(), "--http", "127.0.0.1:0")
	if code, body := httpGet(httpAddr, "/livez"); code != http.StatusOK {
		t.Fatalf("/livez: %d %s", code, body)
	}
	if code, body := httpGet(httpAddr, "/readyz"); code != http.StatusOK {
		t.Fatalf("/readyz: %d %s", code, body)
	}
	conn, err := grpc.NewClient(grpcAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	mq := v2pb.NewMessagingServiceClient(conn)
	waitFor(t, 20*time.Second, "the topic's route through the proxy", func() bool {
		r, err := mq.QueryRoute(ctx, &v2pb.QueryRouteRequest{Topic: &v2pb.Resource{Name: "PMetrics"}})
		return err == nil && r.GetStatus().GetCode() == v2pb.Code_OK
	})
	sent, err := mq.SendMessage(ctx, &v2pb.SendMessageRequest{Messages: []*v2pb.Message{{
		Topic: &v2pb.Resource{Name: "PMetrics"}, Body: []byte("m"),
		SystemProperties: &v2pb.SystemProperties{MessageId: "01AABBCCDDEEFF0000000002", MessageType: v2pb.MessageType_NORMAL,
			BodyEncoding: v2pb.Encoding_IDENTITY, BornTimestamp: timestamppb.Now()},
	}}})
	if err != nil || sent.GetStatus().GetCode() != v2pb.Code_OK {
		t.Fatalf("send: %v %v", sent, err)
	}
	if r, err := mq.QueryRoute(ctx, &v2pb.QueryRouteRequest{Topic: &v2pb.Resource{Name: "NoSuchTopic"}}); err != nil || r.GetStatus().GetCode() != v2pb.Code_TOPIC_NOT_FOUND {
		t.Fatalf("route: %v %v", r, err)
	}
	want := []*regexp.Regexp{
		regexp.MustCompile(`ledgermq_grpc_calls_total\{code="OK",grpc_code="OK",method="SendMessage",proxy="` + regexp.QuoteMeta(grpcAddr) + `"\} 1\n`),
		regexp.MustCompile(`ledgermq_grpc_calls_total\{code="TOPIC_NOT_FOUND",grpc_code="OK",method="QueryRoute",[^}]*\} 1\n`),
		regexp.MustCompile(`ledgermq_grpc_calls_total\{code="OK",grpc_code="OK",method="QueryRoute",[^}]*\} [1-9]`),
		regexp.MustCompile(`ledgermq_grpc_call_seconds_count\{method="SendMessage",[^}]*\} 1\n`),
	}
	var body string
	waitFor(t, 20*time.Second, "the calls in the proxy's /metrics", func() bool {
		_, body = httpGet(httpAddr, "/metrics")
		for _, re := range want {
			if !re.MatchString(body) {
				return false
			}
		}
		return true
	})
	promtoolCheck(t, "the proxy", body)
}

// The proxy's own account: an access key needs its secret (file, flag or
// environment), a secret needs an access key; --acl-enable needs both.
func TestProxyCredentials(t *testing.T) {
	file := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(file, []byte(" from-the-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv(envProxySecretKey, "")
	if c, err := proxyCredentials("", "", ""); err != nil || c.AccessKey != "" {
		t.Fatalf("no account: %+v %v", c, err)
	}
	if c, err := proxyCredentials("proxy-key", "ignored", file); err != nil || c.SecretKey != "from-the-file" {
		t.Fatalf("a secret key file: %+v %v", c, err)
	}
	if c, err := proxyCredentials("proxy-key", "from-the-flag", ""); err != nil || c.SecretKey != "from-the-flag" {
		t.Fatalf("a secret key flag: %+v %v", c, err)
	}
	if _, err := proxyCredentials("proxy-key", "", ""); err == nil {
		t.Fatal("an access key without its secret was taken")
	}
	if _, err := proxyCredentials("", "a-secret", ""); err == nil {
		t.Fatal("a secret without an access key was taken")
	}
	t.Setenv(envProxySecretKey, "from-the-env")
	if c, err := proxyCredentials("proxy-key", "", ""); err != nil || c.SecretKey != "from-the-env" {
		t.Fatalf("a secret key in the environment: %+v %v", c, err)
	}
	cmd := newRootCmd()
	cmd.SetArgs([]string{"proxy", "--listen", "127.0.0.1:0", "-n", "127.0.0.1:1", "--acl-enable"})
	cmd.SetOut(io.Discard)
	cmd.SetErr(io.Discard)
	if err := cmd.Execute(); err == nil || !strings.Contains(err.Error(), "admin account") {
		t.Fatalf("--acl-enable without an account: %v", err)
	}
}
