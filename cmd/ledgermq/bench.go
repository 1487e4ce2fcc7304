package main

// `ledgermq bench produce|latency`: load through our client against a
// running cluster (found through -n), with a live line each second and a
// summary line in a fixed shape (internal/harness/bench documents both). Every
// performance figure of the project is measured with it.

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jedib0t/go-pretty/v6/progress"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/ledgermq/ledgermq/auth"
	"github.com/ledgermq/ledgermq/client"
	"github.com/ledgermq/ledgermq/internal/harness/bench"
	"github.com/ledgermq/ledgermq/remoting"
)

// benchFlags are the flags of every bench mode.
type benchFlags struct {
	namesrv     string
	topic       string
	producers   int
	inflight    int
	size        int
	count       int64
	duration    time.Duration
	rate        float64
	sendTimeout time.Duration
	compress    bool
	verify      bool
	output      string
	tls         tlsFlags
	grpc        string // send through this RocketMQ 5 gRPC endpoint (produce modes)
	cpuProfile  string // write the run's CPU profile here (produce modes)
	memProfile  string // write the run's allocation profile here (produce modes)
}

func newBenchCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure a running cluster through the ledgermq client",
		Long: "bench produce runs --producers clients, each with --inflight sends outstanding (or, with --rate,\n" +
			"an open loop whose latencies count from each send's intended time), until --count sends or\n" +
			"--duration. bench latency is produce with one producer and one send at a time. Each prints a\n" +
			"line a second and ends with\n" +
			"  summary: sent=N acked=N failed=N unknown=N msgs/s=X MB/s=Y p50=Xms p90=Xms p99=Xms p999=Xms max=Xms max-gap-ms=N\n" +
			"(--output json: the same as JSON) on stdout; the live lines go to stderr. max-gap-ms is the longest\n" +
			"time no send was acknowledged. Against a cluster with its ACL on, --access-key and --secret-key\n" +
			"sign every request of the run (producers, consumers, --verify's lookups); sends or lookups\n" +
			"refused with NO_PERMISSION fail the run.",
	}
	cmd.AddCommand(newBenchProduceCmd("produce", 1, 16), newBenchProduceCmd("latency", 1, 1), newBenchConsumeCmd())
	return cmd
}

// checkOutput reads --output, "table" being text's other name.
func (bf *benchFlags) checkOutput() error {
	asJSON, err := outputJSON(bf.output)
	if err != nil {
		return err
	}
	bf.output = map[bool]string{true: "json", false: "text"}[asJSON]
	return nil
}

func newBenchConsumeCmd() *cobra.Command {
	bf := &benchFlags{}
	var consumers, pullBatch int
	var preload bool
	var idle time.Duration
	cmd := &cobra.Command{
		Use:   "consume",
		Short: "Consume msgs/s through a push consumer group, checking every queue for gaps and duplicates",
		Long: "bench consume first produces --count messages to a topic of its own (unless --preload=false, and\n" +
			"then --topic must hold them), then --consumers push consumers of a new group read them from the\n" +
			"first offset until all --count arrived or --duration passed. The summary adds gaps= (offsets\n" +
			"missing in a queue, counted from 0 for a preloaded topic) and duplicates= (offsets delivered\n" +
			"twice); latencies run from each message's store time. A broker whose disk is fuller than\n" +
			"diskMaxUsedSpaceRatio deletes its oldest CommitLog segments at once: what they held shows\n" +
			"as gaps, and --idle ends the wait for it.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := bf.checkOutput(); err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return runBenchConsume(ctx, cmd.OutOrStdout(), cmd.ErrOrStderr(), bf, consumers, pullBatch, preload, idle)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&bf.namesrv, "namesrv", "n", defaultNamesrv(), namesrvUsage)
	f.StringVar(&bf.topic, "topic", "", "topic (default: a new one per run, when preloading)")
	f.IntVar(&consumers, "consumers", 1, "push consumers in the group, each its own client")
	f.IntVar(&pullBatch, "pull-batch", 32, "messages one pull asks for")
	f.BoolVar(&preload, "preload", true, "produce --count messages first (with 4 producers, 32 in flight each)")
	f.IntVar(&bf.size, "size", 1024, "body size of the preloaded messages")
	f.Int64Var(&bf.count, "count", 100000, "messages to consume")
	f.DurationVar(&bf.duration, "duration", 5*time.Minute, "stop after this long")
	f.DurationVar(&idle, "idle", 10*time.Second, "stop once nothing arrived for this long (messages retention removed never come)")
	f.StringVarP(&bf.output, "output", "o", "text", "summary format: "+strings.TrimPrefix(outputUsage, "output format: "))
	bf.tls.add(f)
	return cmd
}

func runBenchConsume(ctx context.Context, out, progress io.Writer, bf *benchFlags, consumers, pullBatch int, preload bool, idle time.Duration) error {
	runID := strconv.FormatInt(time.Now().UnixNano(), 36)
	if bf.topic == "" {
		if !preload {
			return fmt.Errorf("%w: --preload=false needs the --topic to read", errAdmin)
		}
		bf.topic = "BenchConsume-" + runID
	}
	if preload {
		pf := *bf
		pf.producers, pf.inflight, pf.duration, pf.sendTimeout, pf.output = 4, 32, 0, 3*time.Second, "text"
		fmt.Fprintf(progress, "preloading %d messages of %d bytes into %s\n", bf.count, bf.size, bf.topic)
		if err := runBenchProduce(ctx, progress, io.Discard, &pf); err != nil {
			return err
		}
	}
	live := newLiveReport(progress, bf)
	s, err := bench.Consume(ctx, bench.ConsumeConfig{
		Consumers: consumers, Count: bf.count, Duration: bf.duration, Report: live.interval,
		FromZero: preload, Idle: idle,
		NewConsumer: func(i int, deliver func(bench.Received)) (bench.Consumer, error) {
			c, err := client.NewPushConsumer(append([]client.Option{client.WithNameServers(splitNamesrv(bf.namesrv)...), client.WithGroup("bench-consume-" + runID),
				client.WithConsumeFromWhere(client.ConsumeFromFirstOffset), client.WithPullBatchSize(pullBatch),
				client.WithInstanceName(fmt.Sprintf("bench-%s-%d", runID, i))}, bf.tls.clientOptions()...)...)
			if err != nil {
				return nil, err
			}
			err = c.Subscribe(bf.topic, client.Selector{}, func(_ context.Context, m *client.MessageExt) client.ConsumeResult {
				deliver(bench.Received{Queue: m.Queue.String(), Offset: m.QueueOffset, Body: m.Body, Stored: time.UnixMilli(m.StoreTimestamp)})
				return client.ConsumeSuccess
			})
			if err == nil {
				err = c.Start()
			}
			if err != nil {
				_ = c.Close()
				return nil, err
			}
			return c, nil
		},
	})
	live.done()
	if err != nil {
		return err
	}
	if bf.output == "json" {
		if err := printJSON(out, s); err != nil {
			return err
		}
	} else if _, err := fmt.Fprintln(out, s.String()); err != nil {
		return err
	}
	if s.Gaps > 0 {
		return fmt.Errorf("%w: %d messages never arrived (see bench consume --help on retention)", errAdmin, s.Gaps)
	}
	return nil
}

func newBenchProduceCmd(use string, producers, inflight int) *cobra.Command {
	bf := &benchFlags{}
	short := "Acknowledged sends per second and their latency"
	if use == "latency" {
		short = "Latency of one send at a time (produce with one producer, one in flight)"
	}
	cmd := &cobra.Command{
		Use: use, Short: short, Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := bf.checkOutput(); err != nil {
				return err
			}
			if bf.count == 0 && bf.duration == 0 {
				bf.duration = 10 * time.Second
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return runBenchProduce(ctx, cmd.OutOrStdout(), cmd.ErrOrStderr(), bf)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&bf.namesrv, "namesrv", "n", defaultNamesrv(), namesrvUsage)
	f.StringVar(&bf.topic, "topic", "BenchTopic", "topic (created on the first send when the broker auto-creates topics)")
	f.IntVar(&bf.producers, "producers", producers, "producer clients, each with its own connections")
	f.IntVar(&bf.inflight, "inflight", inflight, "sends each producer keeps outstanding")
	f.IntVar(&bf.size, "size", 1024, "body size in bytes")
	f.Int64Var(&bf.count, "count", 0, "stop after this many sends")
	f.DurationVar(&bf.duration, "duration", 0, "stop after this long (default 10s when --count is not given)")
	f.Float64Var(&bf.rate, "rate", 0, "open loop: this many sends per second in all (0: as fast as --inflight allows)")
	f.DurationVar(&bf.sendTimeout, "send-timeout", 3*time.Second, "bound on each send and its retries")
	f.BoolVar(&bf.verify, "verify", false, "afterwards read every acknowledged send back by offset, and count the stored copies of every send that failed or had an unknown outcome (keys each message; memory grows with the count)")
	f.BoolVar(&bf.compress, "compress", false, "let the client compress bodies of 4 KiB and more (off: bench bodies compress unrealistically well)")
	f.StringVarP(&bf.output, "output", "o", "text", "summary format: "+strings.TrimPrefix(outputUsage, "output format: "))
	f.StringVar(&bf.grpc, "grpc", "", "send through this RocketMQ 5 gRPC `ENDPOINT` (a node's gRPC port, or ledgermq proxy), one SendMessage call per message, instead of the remoting client")
	f.StringVar(&bf.cpuProfile, "cpuprofile", "", "write a CPU profile of the run (the client's own cost) to this file")
	_ = f.MarkHidden("cpuprofile")
	f.StringVar(&bf.memProfile, "memprofile", "", "write an allocation profile of the run (every allocation sampled) to this file")
	_ = f.MarkHidden("memprofile")
	bf.tls.add(f)
	return cmd
}

// runBenchProduce runs the load; the live lines go to progress (stderr),
// the summary to out (stdout), so a script can read stdout alone.
func runBenchProduce(ctx context.Context, out, progress io.Writer, bf *benchFlags) error {
	if err := bf.tls.check(); err != nil {
		return err
	}
	if bf.grpc != "" && (bf.verify || bf.compress || bf.tls != (tlsFlags{})) {
		return errors.New("bench: --grpc sends plain NORMAL messages over TCP, unsigned: no --verify, --compress, TLS or ACL flags with it")
	}
	live := newLiveReport(progress, bf)
	opts := append([]client.Option{client.WithNameServers(splitNamesrv(bf.namesrv)...), client.WithSendTimeout(bf.sendTimeout)}, bf.tls.clientOptions()...)
	if !bf.compress {
		opts = append(opts, client.WithCompression(0, 0))
	}
	cfg := bench.ProduceConfig{
		Topic: bf.topic, Producers: bf.producers, Inflight: bf.inflight, Size: bf.size,
		// The client's WithSendTimeout bounds each send: a per-send
		// context of the bench's own would cost a timer per send, and the
		// client keeps that deadline with none.
		Count: bf.count, Duration: bf.duration, Rate: bf.rate,
		NewSender: func(i int) (bench.Sender, error) {
			if bf.grpc != "" {
				return newGRPCSender(bf.grpc)
			}
			return client.NewProducer(append(opts, client.WithGroup(fmt.Sprintf("bench-producer-%d", i)))...)
		},
		Report: live.interval,
		Keep:   bf.verify, RunID: strconv.FormatInt(time.Now().UnixNano(), 36),
	}
	if !bf.verify && os.Getenv("GOGC") == "" {
		// A run that keeps nothing has a small live heap (its sends in
		// flight, two histograms: a few MiB), so let the heap grow to five
		// times that between collections rather than twice: the collector,
		// whose every cycle wakes the process's threads, runs a quarter as
		// often. A run with --verify keeps every send and grows; GOGC in
		// the environment is obeyed.
		defer debug.SetGCPercent(debug.SetGCPercent(400))
	}
	stopProfile, err := startCPUProfile(bf.cpuProfile)
	if err != nil {
		return err
	}
	stopMem := startMemProfile(bf.memProfile)
	cpu0 := processCPU()
	res, err := bench.Produce(ctx, cfg)
	cpu := processCPU() - cpu0
	stopProfile()
	live.done()
	if err != nil {
		return err
	}
	if err := stopMem(); err != nil {
		return err
	}
	if res.Summary.Acked > 0 && cpu > 0 {
		// The process is the client: its CPU per acknowledged send is the
		// client's cost of a message, the figure the client is tuned by.
		fmt.Fprintf(progress, "client cpu: %.1fs, %.1f µs per acked send\n",
			cpu.Seconds(), float64(cpu.Microseconds())/float64(res.Summary.Acked))
	}

	var v *bench.Verification
	if bf.verify {
		ac, err := client.NewAdmin(append([]client.AdminOption{client.WithAdminNameServers(splitNamesrv(bf.namesrv)...)}, bf.tls.adminOptions()...)...)
		if err != nil {
			return err
		}
		a := &admin{c: ac, out: out}
		defer a.Close()
		rcTLS, err := bf.tls.config()
		if err != nil {
			return err
		}
		rc := remoting.NewClient(remoting.ClientConfig{TLS: rcTLS})
		defer rc.Close()
		vctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		got := bench.Verify(vctx, bf.topic, res.Sent, &clusterReader{a: a, rc: rc, leaders: map[string]string{},
			creds: auth.Credentials{AccessKey: bf.tls.accessKey, SecretKey: bf.tls.secretKey}})
		v = &got
	}
	if bf.output == "json" {
		if err := printJSON(out, struct {
			bench.Summary
			Errors       map[string]int64    `json:"errors,omitempty"`
			Verification *bench.Verification `json:"verification,omitempty"`
		}{res.Summary, res.Errors, v}); err != nil {
			return err
		}
		return benchOutcome(bf, res, v)
	}
	if _, err := fmt.Fprintln(out, res.Summary.String()); err != nil {
		return err
	}
	for _, e := range sortedErrors(res.Errors) {
		fmt.Fprintf(out, "errors: %d× %s\n", res.Errors[e], e)
	}
	if v != nil {
		fmt.Fprintf(out, "verify: lost=%d duplicates=%d unknown-stored=%d failed-stored=%d\n", v.Lost, v.Duplicates, v.UnknownStored, v.FailedStored)
		for _, e := range v.Errors {
			fmt.Fprintf(out, "verify: %s\n", e)
		}
	}
	return benchOutcome(bf, res, v)
}

// startCPUProfile starts Go's CPU profile into path ("": none) and returns
// what stops it.
func startCPUProfile(path string) (func(), error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	return func() {
		pprof.StopCPUProfile()
		_ = f.Close()
	}, nil
}

// startMemProfile samples every allocation from now on and returns what
// writes the profile to path ("": no profile, nothing sampled).
func startMemProfile(path string) func() error {
	if path == "" {
		return func() error { return nil }
	}
	old := runtime.MemProfileRate
	runtime.MemProfileRate = 1
	return func() error {
		// The rate stays 1 until the profile is written: pprof scales each
		// sample by the rate in force then.
		defer func() { runtime.MemProfileRate = old }()
		f, err := os.Create(path)
		if err != nil {
			return fmt.Errorf("memory profile: %w", err)
		}
		if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
			_ = f.Close()
			return fmt.Errorf("memory profile: %w", err)
		}
		if err := f.Close(); err != nil {
			return fmt.Errorf("memory profile: %w", err)
		}
		return nil
	}
}

// processCPU is the CPU time (user and system) this process has used; 0
// when the system does not tell.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// benchOutcome is the run's exit: an error when a broker refused sends or
// lookups with NO_PERMISSION (named, with what to do), or when the
// verification found acknowledged sends lost or failed sends stored.
func benchOutcome(bf *benchFlags, res bench.Result, v *bench.Verification) error {
	hint := "the cluster's ACL is on: give --access-key and --secret-key of an account that may PUB and SUB topic " + bf.topic
	if bf.tls.accessKey != "" {
		hint = "account " + bf.tls.accessKey + " may not PUB or SUB topic " + bf.topic + " (or its secret key is wrong)"
	}
	if res.Refused > 0 {
		return fmt.Errorf("%w: %d sends refused with NO_PERMISSION (%s): %s", errAdmin, res.Refused, res.RefusedRemark, hint)
	}
	if v == nil {
		return nil
	}
	if v.Refused > 0 {
		return fmt.Errorf("%w: verification refused with NO_PERMISSION %d times: %s", errAdmin, v.Refused, hint)
	}
	if v.Lost > 0 || v.FailedStored > 0 {
		return fmt.Errorf("%w: verification failed: %d acknowledged sends lost, %d failed sends stored", errAdmin, v.Lost, v.FailedStored)
	}
	return nil
}

// liveReport shows each second's figures: a progress tracker on a
// terminal, plain lines otherwise.
type liveReport struct {
	out     io.Writer
	pw      progress.Writer
	tracker *progress.Tracker
	byCount bool
	acked   int64
}

func newLiveReport(out io.Writer, bf *benchFlags) *liveReport {
	lr := &liveReport{out: out, byCount: bf.count > 0}
	f, ok := out.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return lr
	}
	lr.pw = progress.NewWriter()
	lr.pw.SetOutputWriter(out)
	lr.pw.SetUpdateFrequency(200 * time.Millisecond)
	lr.pw.SetAutoStop(false)
	lr.pw.SetTrackerLength(20)
	lr.tracker = &progress.Tracker{Message: "starting", Units: progress.UnitsDefault}
	if lr.byCount {
		lr.tracker.Total = bf.count
	} else {
		lr.tracker.Total = int64(bf.duration / time.Second)
	}
	lr.pw.AppendTracker(lr.tracker)
	go lr.pw.Render()
	return lr
}

func (lr *liveReport) interval(iv bench.Interval) {
	lr.acked += iv.Acked
	if lr.tracker == nil {
		fmt.Fprintln(lr.out, iv.String())
		return
	}
	lr.tracker.UpdateMessage(iv.String())
	if lr.byCount {
		lr.tracker.SetValue(lr.acked)
	} else {
		lr.tracker.SetValue(int64(iv.Elapsed / time.Second))
	}
}

func (lr *liveReport) done() {
	if lr.tracker == nil {
		return
	}
	lr.tracker.MarkAsDone()
	lr.pw.Stop()
	for lr.pw.IsRenderInProgress() {
		time.Sleep(10 * time.Millisecond) // the renderer's own goroutine finishing its last frame
	}
}

// sortedErrors lists the error texts of a run, the most frequent first.
func sortedErrors(errs map[string]int64) []string {
	out := make([]string, 0, len(errs))
	for e := range errs {
		out = append(out, e)
	}
	slices.SortFunc(out, func(a, b string) int {
		if errs[a] != errs[b] {
			return cmp.Compare(errs[b], errs[a])
		}
		return strings.Compare(a, b)
	})
	return out
}
