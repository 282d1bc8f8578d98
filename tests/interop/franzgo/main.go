// Command franzgo is the franz-go (kgo) interop scenario: the same records, digest and JSON summary as
// tests/interop/java InteropClient and tests/interop/kafkajs/client.js.
//
//	franzgo --bootstrap B1,B2 --topic T --count N [--mode produce|consume|produce-consume]
//	        [--partitions P] [--group G] [--timeout-ms MS] [--producer-config linger.ms=5,batch.size=2048]
//	        [--records-per-second R]
//
// Produces N keyed records with headers (franz-go's default idempotent producer, acks=all, lz4 as the Java
// client), partitioned by franz-go's default partitioner, which hashes keys with Kafka's murmur2 as the Java
// client does, then reads them back: with --group through a consumer group (classic protocol, from the start,
// committing what it read before leaving), otherwise by consuming every partition from offset 0 without a group.
//
// --producer-config takes the Java client's property names; two are mapped to franz-go options: linger.ms
// (ProducerLinger, 10 ms by default) and batch.size (ProducerBatchMaxBytes, at least 512); small batches make a
// produce take many requests.
//
// --records-per-second paces the produce (record i is handed to the client no earlier than i/R seconds after the
// first): a Go producer writes a few thousand records in a fraction of a second, before faults set every 250 ms by
// a test would meet it. 0 (the default): no pacing.
//
// FRANZGO_LOG=debug|info|warn sends franz-go's own log to stderr.
//
// Record i: key "key-i", value "value-i" + i%7 copies of "-pad", headers idx=i and src=interop.
// Digest: sha256 over the sorted lines "hex(key) hex(value) name=hex(value),..." of the records.
package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

type partitionStats struct {
	Count       int   `json:"count"`
	FirstOffset int64 `json:"first_offset"`
	LastOffset  int64 `json:"last_offset"`
}

// summary is the JSON line printed at the end; the produce and consume fields appear only in their modes
// (pointers, so that an empty map or a zero count is still printed when its mode ran).
type summary struct {
	Client             string                      `json:"client"`
	Topic              string                      `json:"topic"`
	Produced           *int                        `json:"produced,omitempty"`
	ProducedPartitions *map[string]*partitionStats `json:"produced_partitions,omitempty"`
	ProducedDigest     string                      `json:"produced_digest,omitempty"`
	Consumed           *int                        `json:"consumed,omitempty"`
	LastOffset         *map[string]int64           `json:"last_offset,omitempty"`
	OutOfOrder         *int                        `json:"out_of_order,omitempty"`
	Digest             string                      `json:"digest,omitempty"`
}

type options struct {
	bootstrap  []string
	topic      string
	count      int
	partitions int
	mode       string
	group      string
	timeout    time.Duration
	producer   []kgo.Opt
	perSecond  int
}

func parseArgs(argv []string) (options, error) {
	args := map[string]string{}
	for i := 0; i+1 < len(argv); i += 2 {
		if !strings.HasPrefix(argv[i], "--") {
			return options{}, fmt.Errorf("expected --name value, got %s", argv[i])
		}
		args[argv[i][2:]] = argv[i+1]
	}
	if len(argv)%2 != 0 {
		return options{}, fmt.Errorf("option %s has no value", argv[len(argv)-1])
	}
	for _, required := range []string{"bootstrap", "topic"} {
		if args[required] == "" {
			return options{}, fmt.Errorf("--%s is required", required)
		}
	}
	number := func(name, fallback string) (int, error) {
		value := args[name]
		if value == "" {
			value = fallback
		}
		n, err := strconv.Atoi(value)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("--%s must be a non-negative integer, got %q", name, value)
		}
		return n, nil
	}
	opts := options{bootstrap: strings.Split(args["bootstrap"], ","), topic: args["topic"], mode: args["mode"],
		group: args["group"]}
	if opts.mode == "" {
		opts.mode = "produce-consume"
	}
	if opts.mode != "produce" && opts.mode != "consume" && opts.mode != "produce-consume" {
		return options{}, fmt.Errorf("--mode must be produce, consume or produce-consume, got %q", opts.mode)
	}
	var err error
	if opts.count, err = number("count", "100"); err != nil {
		return options{}, err
	}
	if opts.partitions, err = number("partitions", "3"); err != nil {
		return options{}, err
	}
	timeoutMs, err := number("timeout-ms", "30000")
	if err != nil {
		return options{}, err
	}
	opts.timeout = time.Duration(timeoutMs) * time.Millisecond
	if opts.perSecond, err = number("records-per-second", "0"); err != nil {
		return options{}, err
	}
	if opts.producer, err = producerConfig(args["producer-config"]); err != nil {
		return options{}, err
	}
	return opts, nil
}

// producerConfig turns "k=v,k=v" into producer options; a property franz-go has no counterpart for is refused.
func producerConfig(spec string) ([]kgo.Opt, error) {
	var producerOpts []kgo.Opt
	for _, pair := range strings.Split(spec, ",") {
		if pair == "" {
			continue
		}
		key, value, found := strings.Cut(pair, "=")
		n, err := strconv.Atoi(value)
		if !found || key == "" || err != nil || n < 0 {
			return nil, fmt.Errorf("--producer-config: expected key=non-negative integer, got %q", pair)
		}
		switch key {
		case "linger.ms":
			producerOpts = append(producerOpts, kgo.ProducerLinger(time.Duration(n)*time.Millisecond))
		case "batch.size":
			if n < 512 {
				return nil, fmt.Errorf("--producer-config: batch.size must be at least 512 (franz-go's minimum), got %d", n)
			}
			producerOpts = append(producerOpts, kgo.ProducerBatchMaxBytes(int32(n)))
		default:
			return nil, fmt.Errorf("--producer-config: unsupported property %q (supported: linger.ms, batch.size)", key)
		}
	}
	return producerOpts, nil
}

func hexOf(b []byte) string {
	if b == nil {
		return "-"
	}
	return hex.EncodeToString(b)
}

func line(key, value []byte, headers []kgo.RecordHeader) string {
	hs := make([]string, len(headers))
	for i, h := range headers {
		hs[i] = h.Key + "=" + hexOf(h.Value)
	}
	return hexOf(key) + " " + hexOf(value) + " " + strings.Join(hs, ",")
}

// digest sorts a copy of lines by bytes: the same order as Java's UTF-16 sort for these ASCII lines.
func digest(lines []string) string {
	sorted := append([]string(nil), lines...)
	sort.Strings(sorted)
	sum := sha256.Sum256([]byte(strings.Join(sorted, "\n")))
	return hex.EncodeToString(sum[:])
}

func makeRecord(topic string, i int) *kgo.Record {
	return &kgo.Record{
		Topic: topic,
		Key:   []byte(fmt.Sprintf("key-%d", i)),
		Value: []byte(fmt.Sprintf("value-%d", i) + strings.Repeat("-pad", i%7)),
		Headers: []kgo.RecordHeader{
			{Key: "idx", Value: []byte(strconv.Itoa(i))},
			{Key: "src", Value: []byte("interop")},
		},
	}
}

// createTopic creates the topic with replication factor 1, as the Java and kafkajs clients do; a topic that
// exists already is used as it is.
func createTopic(ctx context.Context, client *kgo.Client, topic string, partitions int) error {
	request := kmsg.NewPtrCreateTopicsRequest()
	request.TimeoutMillis = 30000
	requested := kmsg.NewCreateTopicsRequestTopic()
	requested.Topic = topic
	requested.NumPartitions = int32(partitions)
	requested.ReplicationFactor = 1
	request.Topics = append(request.Topics, requested)
	response, err := request.RequestWith(ctx, client)
	if err != nil {
		return fmt.Errorf("CreateTopics %s: %w", topic, err)
	}
	for _, created := range response.Topics {
		if err := kerr.ErrorForCode(created.ErrorCode); err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
			return fmt.Errorf("CreateTopics %s: %w", topic, err)
		}
	}
	return nil
}

// logOpts is franz-go's logger on stderr at the level FRANZGO_LOG names (none by default).
func logOpts() []kgo.Opt {
	levels := map[string]kgo.LogLevel{"debug": kgo.LogLevelDebug, "info": kgo.LogLevelInfo, "warn": kgo.LogLevelWarn}
	level, found := levels[os.Getenv("FRANZGO_LOG")]
	if !found {
		return nil
	}
	return []kgo.Opt{kgo.WithLogger(kgo.BasicLogger(os.Stderr, level, nil))}
}

// produce sends every record and waits for all acknowledgements, for at most --timeout-ms.
func produce(ctx context.Context, opts options, out *summary) error {
	ctx, cancel := context.WithTimeout(ctx, opts.timeout)
	defer cancel()
	client, err := kgo.NewClient(append(append([]kgo.Opt{
		kgo.SeedBrokers(opts.bootstrap...),
		kgo.ClientID("minikafka-interop"),
		kgo.RequiredAcks(kgo.AllISRAcks()), // the default, and what the idempotent producer needs
		kgo.ProducerBatchCompression(kgo.Lz4Compression()),
	}, opts.producer...), logOpts()...)...)
	if err != nil {
		return err
	}
	defer client.Close()
	if err := createTopic(ctx, client, opts.topic, opts.partitions); err != nil {
		return err
	}
	var (
		mu       sync.Mutex
		failure  error
		produced = map[string]*partitionStats{}
	)
	lines := make([]string, 0, opts.count)
	started := time.Now()
	for i := 0; i < opts.count; i++ {
		if opts.perSecond > 0 {
			time.Sleep(time.Until(started.Add(time.Duration(i) * time.Second / time.Duration(opts.perSecond))))
		}
		record := makeRecord(opts.topic, i)
		lines = append(lines, line(record.Key, record.Value, record.Headers))
		client.Produce(ctx, record, func(r *kgo.Record, err error) {
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				if failure == nil {
					failure = fmt.Errorf("record %s: %w", r.Key, err)
				}
				return
			}
			key := strconv.Itoa(int(r.Partition))
			stats, seen := produced[key]
			if !seen {
				stats = &partitionStats{FirstOffset: r.Offset, LastOffset: r.Offset}
				produced[key] = stats
			}
			stats.Count++
			stats.FirstOffset = min(stats.FirstOffset, r.Offset)
			stats.LastOffset = max(stats.LastOffset, r.Offset)
		})
	}
	if err := client.Flush(ctx); err != nil {
		return fmt.Errorf("waiting for the acknowledgements: %w", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if failure != nil {
		return failure
	}
	out.Produced = &opts.count
	out.ProducedPartitions = &produced
	out.ProducedDigest = digest(lines)
	return nil
}

func consume(ctx context.Context, opts options, out *summary) error {
	clientOpts := []kgo.Opt{
		kgo.SeedBrokers(opts.bootstrap...),
		kgo.ClientID("minikafka-interop"),
		kgo.ConsumeTopics(opts.topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
	}
	if opts.group != "" {
		clientOpts = append(clientOpts, kgo.ConsumerGroup(opts.group), kgo.DisableAutoCommit())
	}
	clientOpts = append(clientOpts, logOpts()...)
	client, err := kgo.NewClient(clientOpts...)
	if err != nil {
		return err
	}
	defer client.Close() // leaves the group
	deadline, cancel := context.WithTimeout(ctx, opts.timeout)
	defer cancel()
	var lines []string
	lastOffset := map[string]int64{}
	previous := map[int32]int64{}
	outOfOrder := 0
	for len(lines) < opts.count && deadline.Err() == nil {
		fetches := client.PollFetches(deadline)
		fetches.EachError(func(topic string, partition int32, err error) {
			if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
				fmt.Fprintf(os.Stderr, "fetch %s[%d]: %v\n", topic, partition, err)
			}
		})
		fetches.EachRecord(func(r *kgo.Record) {
			if before, seen := previous[r.Partition]; seen && r.Offset <= before {
				outOfOrder++
			}
			previous[r.Partition] = r.Offset
			lastOffset[strconv.Itoa(int(r.Partition))] = r.Offset
			lines = append(lines, line(r.Key, r.Value, r.Headers))
		})
	}
	if opts.group != "" {
		commitCtx, cancelCommit := context.WithTimeout(ctx, 30*time.Second)
		defer cancelCommit()
		if err := client.CommitUncommittedOffsets(commitCtx); err != nil {
			return fmt.Errorf("commit in group %s: %w", opts.group, err)
		}
	}
	consumed := len(lines)
	out.Consumed = &consumed
	out.LastOffset = &lastOffset
	out.OutOfOrder = &outOfOrder
	out.Digest = digest(lines)
	return nil
}

func run(argv []string) error {
	opts, err := parseArgs(argv)
	if err != nil {
		return err
	}
	ctx := context.Background()
	out := summary{Client: "franz-go", Topic: opts.topic}
	if strings.Contains(opts.mode, "produce") {
		if err := produce(ctx, opts, &out); err != nil {
			return err
		}
	}
	if strings.Contains(opts.mode, "consume") {
		if err := consume(ctx, opts, &out); err != nil {
			return err
		}
	}
	encoded, err := json.Marshal(out)
	if err != nil {
		return err
	}
	fmt.Println(string(encoded))
	return nil
}

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "franzgo:", err)
		os.Exit(1)
	}
}
