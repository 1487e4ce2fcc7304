package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

const mib = 1 << 20

// Request codes of the attacks (RocketMQ's numbering).
const (
	codeHeartBeat      = 34
	codeLockBatchMQ    = 41
	codeRegisterBroker = 103
)

// Settings of the avail attack.
var (
	availPhase, availProbe, availTimeout time.Duration
	availBody                            int
	availLog                             string
)

type options struct {
	bin                     string
	targets, attacks        []string
	frames, frameMiB        int
	conns, sentMiB, declMiB int
	lockReqs, lockQueues    int
	hold, timeout           time.Duration
}

func main() {
	var o options
	var targets, attacks string
	flag.StringVar(&o.bin, "bin", "", "ledgermq binary to measure (required)")
	flag.StringVar(&targets, "targets", "namesrv,broker", "servers to attack: namesrv, broker")
	flag.StringVar(&attacks, "attacks", "frames,partial,locks", "attacks to run: frames, partial, locks; or avail alone (a name server and a broker attacked with -conns stalled frames each for -hold while a route reader and a producer probe them)")
	flag.IntVar(&o.frames, "frames", 64, "frames attack: frames sent back to back")
	flag.IntVar(&o.frameMiB, "frame-mib", 15, "frames attack: size of each frame in MiB")
	flag.IntVar(&o.conns, "conns", 32, "partial attack: connections")
	flag.IntVar(&o.declMiB, "declared-mib", 16, "partial attack: announced frame size in MiB")
	flag.IntVar(&o.sentMiB, "sent-mib", 12, "partial attack: MiB sent of each frame")
	flag.IntVar(&o.lockReqs, "lock-requests", 20, "locks attack: LOCK_BATCH_MQ requests")
	flag.IntVar(&o.lockQueues, "lock-queues", 10000, "locks attack: queues per request")
	flag.DurationVar(&o.hold, "hold", 5*time.Second, "partial and locks attacks: how long the stalled frames are held, or the pause after the locks")
	flag.DurationVar(&o.timeout, "timeout", 60*time.Second, "bound of one attack")
	flag.DurationVar(&availPhase, "phase", 10*time.Second, "avail attack: probing before and after the attack")
	flag.DurationVar(&availProbe, "probe-every", 20*time.Millisecond, "avail attack: pause between two probes of each kind")
	flag.DurationVar(&availTimeout, "request-timeout", 3*time.Second, "avail attack: timeout of one route read or send")
	flag.IntVar(&availBody, "send-body", 1024, "avail attack: bytes of each probe message")
	flag.StringVar(&availLog, "log-level", "warn", "avail attack: the servers' log level")
	flag.Parse()
	if o.bin == "" {
		fmt.Fprintln(os.Stderr, "memattack: -bin is required")
		os.Exit(2)
	}
	o.targets = strings.Split(targets, ",")
	o.attacks = strings.Split(attacks, ",")
	if attacks == "avail" {
		if err := runAvail(availOptions{bin: o.bin, conns: o.conns, declMiB: o.declMiB, sent: o.sentMiB,
			phase: availPhase, attack: o.hold, probe: availProbe, requestTimeout: availTimeout,
			logLevel: availLog, sendBody: availBody}); err != nil {
			fmt.Fprintln(os.Stderr, "memattack:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "memattack:", err)
		os.Exit(1)
	}
}

func run(o options) error {
	fmt.Printf("binary %s\n", o.bin)
	fmt.Printf("%-8s %-34s %10s %10s %10s %10s %s\n", "server", "attack", "rss-before", "rss-peak", "rss-after", "hwm-after", "outcome")
	for _, target := range o.targets {
		for _, attack := range o.attacks {
			res, err := measure(o, target, attack)
			if err != nil {
				return fmt.Errorf("%s/%s: %w", target, attack, err)
			}
			if res.skipped {
				continue
			}
			fmt.Printf("%-8s %-34s %8.1fMi %8.1fMi %8.1fMi %8.1fMi %s\n", target, res.name,
				float64(res.before)/mib, float64(res.peak)/mib, float64(res.after)/mib, float64(res.hwm)/mib, res.outcome)
		}
	}
	return nil
}

type result struct {
	name                     string
	before, peak, after, hwm int64
	outcome                  string
	skipped                  bool // the attack does not apply to the server
}

// measure starts target, runs attack against it and samples its memory.
func measure(o options, target, attack string) (result, error) {
	dir, err := os.MkdirTemp("", "memattack-")
	if err != nil {
		return result{}, err
	}
	defer os.RemoveAll(dir)
	ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
	defer cancel()
	p, addr, err := startServer(ctx, o.bin, target, dir)
	if err != nil {
		return result{}, err
	}
	defer p.stop()

	before, _, err := readMem(p.pid())
	if err != nil {
		return result{}, err
	}
	s := startSampler(p.pid())
	var res result
	switch attack {
	case "frames":
		code := int32(codeRegisterBroker)
		if target == "broker" {
			code = codeHeartBeat
		}
		res.name = fmt.Sprintf("%d x %d MiB frames", o.frames, o.frameMiB)
		res.outcome, err = framesAttack(ctx, addr, code, o.frames, o.frameMiB*mib)
	case "partial":
		res.name = fmt.Sprintf("%d conns x %d of %d MiB", o.conns, o.sentMiB, o.declMiB)
		res.outcome, err = partialAttack(ctx, addr, o.conns, o.declMiB*mib, o.sentMiB*mib, o.hold)
	case "locks":
		if target != "broker" {
			s.stop()
			return result{skipped: true}, nil
		}
		res.name = fmt.Sprintf("%d x LOCK_BATCH_MQ of %d queues", o.lockReqs, o.lockQueues)
		res.outcome, err = locksAttack(ctx, addr, o.lockReqs, o.lockQueues, o.hold)
	default:
		err = fmt.Errorf("unknown attack %q", attack)
	}
	res.peak = s.stop()
	if err != nil {
		return result{}, err
	}
	rss, hwm, err := readMem(p.pid())
	if err != nil {
		return result{}, err
	}
	res.before, res.after, res.hwm = before, rss, hwm
	res.peak = max(res.peak, rss)
	return res, nil
}

// proc is a server process started by the tool.
type proc struct {
	cmd  *exec.Cmd
	done chan error
}

func (p *proc) pid() int { return p.cmd.Process.Pid }

// stop ends the process: SIGTERM, SIGKILL after 10 s.
func (p *proc) stop() {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// startServer runs `ledgermq namesrv` or a one-node `ledgermq broker` on
// free loopback ports and waits until it accepts connections.
func startServer(ctx context.Context, bin, target, dir string) (*proc, string, error) {
	ports, err := freePorts(3)
	if err != nil {
		return nil, "", err
	}
	var args []string
	var addr string
	switch target {
	case "namesrv":
		addr = fmt.Sprintf("127.0.0.1:%d", ports[0])
		args = []string{"namesrv", "--listen", addr, "--log-level", "error"}
	case "broker":
		addr = fmt.Sprintf("127.0.0.1:%d", ports[0])
		args = []string{"broker", "--broker-ip", "127.0.0.1", "--listen-port", strconv.Itoa(ports[0]),
			"--namesrv-addr", fmt.Sprintf("127.0.0.1:%d", ports[1]), "--data-dir", filepath.Join(dir, "data"),
			"--raft-node-id", "n0", "--raft-bind", fmt.Sprintf("127.0.0.1:%d", ports[2]),
			"--store-segment-size", strconv.Itoa(64 * mib), "--log-level", "error"}
	default:
		return nil, "", fmt.Errorf("unknown target %q", target)
	}
	p, err := startProc(bin, dir, target, addr, args...)
	if err != nil {
		return nil, "", err
	}
	// Let the process finish starting (raft election, first
	// registration) before the baseline is read.
	time.Sleep(2 * time.Second)
	return p, addr, nil
}

// startProc runs bin with args, logging to dir/name.log, and waits until
// it accepts connections on addr.
func startProc(bin, dir, name, addr string, args ...string) (*proc, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	target := name
	cmd := exec.Command(bin, args...)
	logf, err := os.Create(filepath.Join(dir, target+".log"))
	if err != nil {
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, err
	}
	p := &proc{cmd: cmd, done: make(chan error, 1)}
	go func() { p.done <- cmd.Wait(); logf.Close() }()
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			break
		}
		select {
		case err := <-p.done:
			p.done <- err
			log, _ := os.ReadFile(filepath.Join(dir, target+".log"))
			return nil, fmt.Errorf("%s exited before serving: %v\n%s", target, err, log)
		case <-ctx.Done():
			p.stop()
			return nil, fmt.Errorf("%s did not start listening: %w", target, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
	return p, nil
}

func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// readMem returns VmRSS and VmHWM of pid in bytes.
func readMem(pid int) (rss, hwm int64, err error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok || k != "VmRSS" && k != "VmHWM" {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("%s: %q: %w", k, v, err)
		}
		if k == "VmRSS" {
			rss = kb << 10
		} else {
			hwm = kb << 10
		}
	}
	return rss, hwm, sc.Err()
}

// sampler polls a process's VmRSS every 20 ms and keeps the peak.
type sampler struct {
	quit chan struct{}
	peak chan int64
}

func startSampler(pid int) *sampler {
	s := &sampler{quit: make(chan struct{}), peak: make(chan int64, 1)}
	go func() {
		var peak int64
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			if rss, _, err := readMem(pid); err == nil {
				peak = max(peak, rss)
			}
			select {
			case <-tick.C:
			case <-s.quit:
				s.peak <- peak
				return
			}
		}
	}()
	return s
}

func (s *sampler) stop() int64 {
	close(s.quit)
	return <-s.peak
}

// header returns the JSON header of a request with code and ext fields.
func header(code int32, opaque int, ext map[string]string) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, `{"code":%d,"language":"GO","version":479,"opaque":%d,"flag":0,"extFields":{`, code, opaque)
	first := true
	for k, v := range ext {
		if !first {
			b.WriteByte(',')
		}
		first = false
		fmt.Fprintf(&b, "%q:%q", k, v)
	}
	b.WriteString("}}")
	return b.Bytes()
}

// frame is a whole request frame of about size bytes whose body is JSON
// with one long string, so the handler scans all of it.
func frame(code int32, opaque, size int) []byte {
	ext := map[string]string{
		"clusterName": "AttackCluster", "brokerName": "attack-b", "brokerAddr": "127.0.0.1:1",
		"brokerId": "1", "haServerAddr": "127.0.0.1:2",
	}
	h := header(code, opaque, ext)
	bodyLen := max(size-8-len(h), 16)
	body := make([]byte, 0, bodyLen)
	body = append(body, `{"pad":"`...)
	body = append(body, bytes.Repeat([]byte("a"), bodyLen-10)...)
	body = append(body, `"}`...)
	f := binary.BigEndian.AppendUint32(nil, uint32(4+len(h)+len(body)))
	f = binary.BigEndian.AppendUint32(f, uint32(len(h)))
	f = append(f, h...)
	return append(f, body...)
}

// framesAttack sends n frames of size bytes back to back on one
// connection while reading the answers.
func framesAttack(ctx context.Context, addr string, code int32, n, size int) (string, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return "", err
	}
	defer c.Close()
	deadline, _ := ctx.Deadline()
	_ = c.SetDeadline(deadline)
	answers := make(chan int, 1)
	go func() {
		got := 0
		for {
			var prefix [4]byte
			if _, err := io.ReadFull(c, prefix[:]); err != nil {
				break
			}
			if _, err := io.CopyN(io.Discard, c, int64(binary.BigEndian.Uint32(prefix[:]))); err != nil {
				break
			}
			if got++; got == n {
				break
			}
		}
		answers <- got
	}()
	start := time.Now()
	f := frame(code, 1, size)
	for i := range n {
		if _, err := c.Write(f); err != nil {
			return fmt.Sprintf("write %d failed after %v: %v", i, time.Since(start).Round(time.Millisecond), err), nil
		}
	}
	sent := time.Since(start)
	select {
	case got := <-answers:
		return fmt.Sprintf("%d frames written in %v, %d answered after %v", n, sent.Round(time.Millisecond), got,
			time.Since(start).Round(time.Millisecond)), nil
	case <-ctx.Done():
		return "", errors.New("answers did not arrive in time")
	}
}

// partialAttack opens conns connections that each announce a frame of
// declared bytes, send sent bytes of it and stall for hold.
func partialAttack(ctx context.Context, addr string, conns, declared, sent int, hold time.Duration) (string, error) {
	h := header(codeHeartBeat, 1, nil)
	chunk := make([]byte, 256<<10)
	var mu sync.Mutex
	full := 0 // connections that sent all their bytes within hold
	var wg sync.WaitGroup
	end := time.Now().Add(hold)
	var dialErr error
	for range conns {
		var d net.Dialer
		c, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			dialErr = err
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer c.Close()
			_ = c.SetWriteDeadline(end)
			b := binary.BigEndian.AppendUint32(nil, uint32(declared-4))
			b = binary.BigEndian.AppendUint32(b, uint32(len(h)))
			b = append(b, h...)
			if _, err := c.Write(b); err != nil {
				return
			}
			for left := sent - len(b); left > 0; left -= len(chunk) {
				if _, err := c.Write(chunk[:min(left, len(chunk))]); err != nil {
					return
				}
			}
			mu.Lock()
			full++
			mu.Unlock()
			time.Sleep(time.Until(end))
		}()
	}
	wg.Wait()
	if dialErr != nil {
		return "", dialErr
	}
	return fmt.Sprintf("%d of %d connections got all %d MiB in within %v", full, conns, sent/mib, hold), nil
}

// locksAttack sends reqs LOCK_BATCH_MQ requests, each for queues queues of
// topics that do not exist under a group of its own, and waits hold.
func locksAttack(ctx context.Context, addr string, reqs, queues int, hold time.Duration) (string, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return "", err
	}
	defer c.Close()
	deadline, _ := ctx.Deadline()
	_ = c.SetDeadline(deadline)
	granted := 0
	for r := range reqs {
		var body bytes.Buffer
		fmt.Fprintf(&body, `{"consumerGroup":"attack-cg-%d","clientId":"127.0.0.1@attacker","mqSet":[`, r)
		for q := range queues {
			if q > 0 {
				body.WriteByte(',')
			}
			fmt.Fprintf(&body, `{"topic":"NoSuchTopic-%d-%d","brokerName":"broker-a","queueId":%d}`, r, q, q%8)
		}
		body.WriteString("]}")
		h := header(codeLockBatchMQ, r+1, nil)
		f := binary.BigEndian.AppendUint32(nil, uint32(4+len(h)+body.Len()))
		f = binary.BigEndian.AppendUint32(f, uint32(len(h)))
		f = append(f, h...)
		if _, err := c.Write(append(f, body.Bytes()...)); err != nil {
			return "", err
		}
		var prefix [4]byte
		if _, err := io.ReadFull(c, prefix[:]); err != nil {
			return "", err
		}
		resp := make([]byte, binary.BigEndian.Uint32(prefix[:]))
		if _, err := io.ReadFull(c, resp); err != nil {
			return "", err
		}
		granted += bytes.Count(resp, []byte(`"queueId"`))
	}
	time.Sleep(hold)
	return fmt.Sprintf("%d of %d queue locks granted", granted, reqs*queues), nil
}
