package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ledgermq/ledgermq/client"
	"github.com/ledgermq/ledgermq/remoting"
)

// availOptions configure the availability attack: a name server and a
// one-node broker registered with it; a route reader and a producer run
// before, during and after conns stalled frames per server.
type availOptions struct {
	bin                  string
	conns, declMiB, sent int
	phase, attack, probe time.Duration
	requestTimeout       time.Duration
	logLevel             string
	sendBody             int
}

// phaseStats are one phase's probe figures.
type phaseStats struct {
	route, send         []time.Duration
	routeFail, sendFail int
	notReady            map[string]int // readiness probes answered 503, by server
	readyz              map[string]string
}

// runAvail runs the availability attack and prints its figures.
func runAvail(o availOptions) error {
	dir, err := os.MkdirTemp("", "availattack-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	ports, err := freePorts(5)
	if err != nil {
		return err
	}
	nsAddr := fmt.Sprintf("127.0.0.1:%d", ports[0])
	nsHTTP := fmt.Sprintf("127.0.0.1:%d", ports[1])
	brAddr := fmt.Sprintf("127.0.0.1:%d", ports[2])
	brHTTP := fmt.Sprintf("127.0.0.1:%d", ports[4])
	ns, err := startProc(o.bin, dir, "namesrv", nsAddr, "namesrv", "--listen", nsAddr, "--http", nsHTTP, "--log-level", o.logLevel)
	if err != nil {
		return err
	}
	defer ns.stop()
	br, err := startProc(o.bin, dir, "broker", brAddr, "broker", "--broker-ip", "127.0.0.1", "--listen-port", strconv.Itoa(ports[2]),
		"--namesrv-addr", nsAddr, "--data-dir", filepath.Join(dir, "data"),
		"--raft-node-id", "n0", "--raft-bind", fmt.Sprintf("127.0.0.1:%d", ports[3]), "--http-addr", brHTTP,
		"--store-segment-size", strconv.Itoa(64*mib), "--log-level", o.logLevel)
	if err != nil {
		return err
	}
	defer br.stop()

	p, err := client.NewProducer(client.WithNameServers(nsAddr), client.WithGroup("avail-probe"),
		client.WithSendTimeout(o.requestTimeout))
	if err != nil {
		return err
	}
	defer p.Close()
	rc := remoting.NewClient(remoting.ClientConfig{})
	defer rc.Close()
	body := make([]byte, o.sendBody)
	send := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), o.requestTimeout)
		defer cancel()
		_, err := p.Send(ctx, &client.Message{Topic: "avail", Body: body})
		return err
	}
	route := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), o.requestTimeout)
		defer cancel()
		resp, err := rc.Invoke(ctx, nsAddr, remoting.NewRequest(remoting.GetRouteInfoByTopic, map[string]string{"topic": "avail"}, nil))
		if err == nil && resp.Code != remoting.Success {
			err = fmt.Errorf("code %d: %s", resp.Code, resp.Remark)
		}
		return err
	}
	// The topic exists once a send has gone through.
	deadline := time.Now().Add(60 * time.Second)
	for send() != nil {
		if time.Now().After(deadline) {
			return fmt.Errorf("no send went through in 60 s")
		}
	}
	nsMem, brMem := startSampler(ns.pid()), startSampler(br.pid())
	readyz := map[string]string{"namesrv": "http://" + nsHTTP + "/readyz", "broker": "http://" + brHTTP + "/readyz"}
	metrics := map[string]string{"namesrv": "http://" + nsHTTP + "/metrics", "broker": "http://" + brHTTP + "/metrics"}

	var phases []string
	results := map[string]*phaseStats{}
	probe := func(name string, d time.Duration) {
		st := &phaseStats{notReady: map[string]int{}, readyz: map[string]string{}}
		results[name] = st
		phases = append(phases, name)
		end := time.Now().Add(d)
		var wg sync.WaitGroup
		var mu sync.Mutex
		loop := func(f func() error, lat *[]time.Duration, fail *int) {
			defer wg.Done()
			for time.Now().Before(end) {
				t := time.Now()
				err := f()
				mu.Lock()
				if err != nil {
					*fail++
				} else {
					*lat = append(*lat, time.Since(t))
				}
				mu.Unlock()
				time.Sleep(o.probe)
			}
		}
		wg.Add(3)
		go loop(route, &st.route, &st.routeFail)
		go loop(send, &st.send, &st.sendFail)
		go func() {
			defer wg.Done()
			for time.Now().Before(end) {
				for srv, u := range readyz {
					code, text := httpGet(u)
					mu.Lock()
					if code != http.StatusOK {
						st.notReady[srv]++
						st.readyz[srv] = strings.TrimSpace(text)
					}
					mu.Unlock()
				}
				time.Sleep(500 * time.Millisecond)
			}
		}()
		wg.Wait()
	}
	probe("before", o.phase)
	att := startAvailAttack(map[string]int32{nsAddr: remoting.RegisterBroker, brAddr: remoting.SendMessage}, o.conns, o.declMiB*mib, o.sent*mib)
	probe("during", o.attack)
	opened, closed := att.stop()
	probe("after", o.phase)
	nsPeak, brPeak := nsMem.stop(), brMem.stop()

	fmt.Printf("binary %s; attack: %d connections per server, %d MiB announced, %d MiB sent, for %s\n",
		o.bin, o.conns, o.declMiB, o.sent, o.attack)
	fmt.Printf("%-7s %-44s %-44s %s\n", "phase", "route read (ok p50/p99/max, failed)", "send (ok p50/p99/max, failed)", "readyz 503s")
	for _, name := range phases {
		st := results[name]
		fmt.Printf("%-7s %-44s %-44s %v\n", name, quant(st.route, st.routeFail), quant(st.send, st.sendFail), st.notReady)
		for srv, why := range st.readyz {
			fmt.Printf("        %s readyz: %s\n", srv, why)
		}
	}
	fmt.Printf("attack connections opened %d, closed by the servers %d\n", opened, closed)
	fmt.Printf("peak RSS: namesrv %.1f MiB, broker %.1f MiB\n", float64(nsPeak)/mib, float64(brPeak)/mib)
	for _, srv := range []string{"namesrv", "broker"} {
		_, text := httpGet(metrics[srv])
		var keep []string
		for _, l := range strings.Split(text, "\n") {
			for _, k := range []string{"_starved_reads_total", "_stalled_closes_total", "_refused_bodies_total", "_read_waits_total", "_read_budget_bytes", "_read_reserve_bytes"} {
				if strings.HasPrefix(l, "ledgermq_remoting"+k) {
					f := strings.Fields(l)
					keep = append(keep, "ledgermq_remoting"+k+"="+f[len(f)-1])
				}
			}
		}
		fmt.Printf("%s metrics: %s\n", srv, strings.Join(keep, " "))
	}
	return nil
}

func quant(lat []time.Duration, failed int) string {
	if len(lat) == 0 {
		return fmt.Sprintf("none ok, %d failed", failed)
	}
	slices.Sort(lat)
	q := func(f float64) time.Duration {
		return lat[min(len(lat)-1, int(f*float64(len(lat))))].Round(10 * time.Microsecond)
	}
	return fmt.Sprintf("%d ok %v/%v/%v, %d failed", len(lat), q(0.5), q(0.99), lat[len(lat)-1].Round(10*time.Microsecond), failed)
}

func httpGet(u string) (int, string) {
	c := http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get(u)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// availAttack holds stalled frames open against servers, redialling those
// the servers close, until stop.
type availAttack struct {
	quit           chan struct{}
	wg             sync.WaitGroup
	mu             sync.Mutex
	opened, closed int
}

func startAvailAttack(targets map[string]int32, conns, declared, sent int) *availAttack {
	a := &availAttack{quit: make(chan struct{})}
	for addr, code := range targets {
		prefix, err := remoting.StallFramePrefix(code, declared, sent)
		if err != nil {
			panic(err)
		}
		for range conns {
			a.wg.Add(1)
			go a.attacker(addr, prefix)
		}
	}
	return a
}

func (a *availAttack) attacker(addr string, prefix []byte) {
	defer a.wg.Done()
	for {
		select {
		case <-a.quit:
			return
		default:
		}
		nc, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			a.mu.Lock()
			a.opened++
			a.mu.Unlock()
			done := make(chan struct{})
			go func() {
				select {
				case <-a.quit:
				case <-done:
				}
				_ = nc.Close()
			}()
			if _, err := nc.Write(prefix); err == nil {
				_, _ = io.Copy(io.Discard, nc)
			}
			select {
			case <-a.quit:
			default:
				a.mu.Lock()
				a.closed++
				a.mu.Unlock()
			}
			close(done)
		}
		select {
		case <-a.quit:
			return
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (a *availAttack) stop() (opened, closed int) {
	close(a.quit)
	a.wg.Wait()
	return a.opened, a.closed
}
