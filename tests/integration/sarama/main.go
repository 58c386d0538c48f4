// Command sarama-check drives kmock with the Go client sarama (Debian's 1.22.1).
//
//	sarama-check -brokers HOST:PORT -topic T -mode MODE -n N [flags]
//
// Modes: produce | consume | group (records); metadata | create-topic |
// delete-topic | list-groups | describe-group | group-offsets (admin).
//
// It prints one JSON object per line on stdout: one per record produced or
// consumed, an "assigned" line per group generation, one line per admin
// answer, then a "done" line. On failure it prints {"event":"error",...} and
// exits 1. Records are keyed "key-<i>" with value "<prefix>-<i>" (i from -start
// to -n), so tests can check order and content. -headers adds the headers
// trace=t-1 and origin=kmock-über to every record; -idempotent makes the
// producer idempotent. -mode group -hold consumes until stdin closes (or a
// SIGTERM), leaving the group then.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"io/ioutil"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/Shopify/sarama"
)

var out = json.NewEncoder(os.Stdout)

func emit(fields map[string]interface{}) {
	if err := out.Encode(fields); err != nil {
		os.Exit(2)
	}
}

func fail(err error) {
	emit(map[string]interface{}{"event": "error", "error": err.Error()})
	os.Exit(1)
}

func record(event string, msg *sarama.ConsumerMessage) map[string]interface{} {
	headers := [][]string{}
	for _, h := range msg.Headers {
		headers = append(headers, []string{string(h.Key), string(h.Value)})
	}
	return map[string]interface{}{
		"event":     event,
		"topic":     msg.Topic,
		"partition": msg.Partition,
		"offset":    msg.Offset,
		"key":       string(msg.Key),
		"value":     string(msg.Value),
		"headers":   headers,
	}
}

// recordHeaders are what -headers adds to every produced record.
var recordHeaders = []sarama.RecordHeader{
	{Key: []byte("trace"), Value: []byte("t-1")},
	{Key: []byte("origin"), Value: []byte("kmock-über")},
}

func main() {
	brokers := flag.String("brokers", "127.0.0.1:9092", "comma-separated bootstrap servers")
	topic := flag.String("topic", "", "topic name (required)")
	mode := flag.String("mode", "produce", "produce | consume | group")
	n := flag.Int("n", 10, "number of records to produce or consume")
	groupID := flag.String("group", "sarama-check", "group_id for -mode group")
	version := flag.String("version", "2.1.0", "Kafka version sarama assumes (decides request versions)")
	compression := flag.String("compression", "none", "none | gzip | snappy | lz4 | zstd (zstd needs -version >= 2.1.0)")
	prefix := flag.String("prefix", "value", "record value prefix")
	partition := flag.Int("partition", -1, "produce to / consume from this partition only (-1: all)")
	timeout := flag.Duration("timeout", 30*time.Second, "give up after this long")
	start := flag.Int("start", 0, "index of the first record produced")
	headers := flag.Bool("headers", false, "add headers trace=t-1 and origin=kmock-über to each record")
	idempotent := flag.Bool("idempotent", false, "idempotent producer (one request in flight)")
	hold := flag.Bool("hold", false, "-mode group: consume until stdin closes or SIGTERM")
	partitions := flag.Int("partitions", 3, "-mode create-topic: number of partitions")
	flag.Parse()
	if *topic == "" && *mode != "list-groups" && *mode != "describe-group" {
		fail(fmt.Errorf("-topic is required"))
	}

	config := sarama.NewConfig()
	config.ClientID = "sarama-check"
	v, err := sarama.ParseKafkaVersion(*version)
	if err != nil {
		fail(err)
	}
	config.Version = v
	addrs := strings.Split(*brokers, ",")
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()

	switch *mode {
	case "produce":
		if *idempotent {
			config.Producer.Idempotent = true
			config.Net.MaxOpenRequests = 1
		}
		err = produce(addrs, config, *topic, *start, *n, *prefix, *compression, int32(*partition), *headers)
	case "consume":
		err = consume(ctx, addrs, config, *topic, *n, int32(*partition))
	case "group":
		err = group(ctx, addrs, config, *topic, *groupID, *n, *hold)
	case "metadata":
		err = metadata(addrs, config, *topic)
	case "create-topic", "delete-topic", "list-groups", "describe-group", "group-offsets":
		err = administer(addrs, config, *mode, *topic, *groupID, int32(*partitions))
	default:
		err = fmt.Errorf("unknown -mode %q", *mode)
	}
	if err != nil {
		fail(err)
	}
	emit(map[string]interface{}{"event": "done", "mode": *mode, "count": *n})
}

func produce(addrs []string, config *sarama.Config, topic string, start, n int, prefix, compression string, partition int32, headers bool) error {
	codecs := map[string]sarama.CompressionCodec{
		"none": sarama.CompressionNone, "gzip": sarama.CompressionGZIP,
		"snappy": sarama.CompressionSnappy, "lz4": sarama.CompressionLZ4, "zstd": sarama.CompressionZSTD,
	}
	codec, ok := codecs[compression]
	if !ok {
		return fmt.Errorf("unknown -compression %q", compression)
	}
	config.Producer.Compression = codec
	config.Producer.RequiredAcks = sarama.WaitForAll
	config.Producer.Return.Successes = true
	if partition >= 0 {
		config.Producer.Partitioner = sarama.NewManualPartitioner
	}
	producer, err := sarama.NewSyncProducer(addrs, config)
	if err != nil {
		return err
	}
	for i := start; i < n; i++ {
		msg := &sarama.ProducerMessage{
			Topic:     topic,
			Partition: partition,
			Key:       sarama.StringEncoder(fmt.Sprintf("key-%d", i)),
			Value:     sarama.StringEncoder(fmt.Sprintf("%s-%d", prefix, i)),
		}
		if headers {
			msg.Headers = recordHeaders
		}
		p, offset, err := producer.SendMessage(msg)
		if err != nil {
			// Close once only: a second Close panics in sarama 1.22 (send on closed channel).
			producer.Close()
			return err
		}
		emit(map[string]interface{}{
			"event": "produced", "topic": topic, "partition": p, "offset": offset,
			"key": fmt.Sprintf("key-%d", i), "value": fmt.Sprintf("%s-%d", prefix, i),
		})
	}
	return producer.Close()
}

// consume reads from the oldest offset of each partition (or just -partition)
// without a group, until n records have arrived.
func consume(ctx context.Context, addrs []string, config *sarama.Config, topic string, n int, only int32) error {
	consumer, err := sarama.NewConsumer(addrs, config)
	if err != nil {
		return err
	}
	defer consumer.Close()
	partitions := []int32{only}
	if only < 0 {
		if partitions, err = consumer.Partitions(topic); err != nil {
			return err
		}
	}
	messages := make(chan *sarama.ConsumerMessage)
	errs := make(chan error, len(partitions))
	for _, p := range partitions {
		pc, err := consumer.ConsumePartition(topic, p, sarama.OffsetOldest)
		if err != nil {
			return err
		}
		defer pc.AsyncClose()
		go func(pc sarama.PartitionConsumer) {
			for msg := range pc.Messages() {
				select {
				case messages <- msg:
				case <-ctx.Done():
					return
				}
			}
		}(pc)
		go func(pc sarama.PartitionConsumer) {
			for e := range pc.Errors() {
				errs <- e
			}
		}(pc)
	}
	for got := 0; got < n; got++ {
		select {
		case msg := <-messages:
			emit(record("consumed", msg))
		case e := <-errs:
			return e
		case <-ctx.Done():
			return fmt.Errorf("timed out after %d of %d records", got, n)
		}
	}
	return nil
}

// handler marks every record it hands out, so the group's offsets are
// committed (sarama 1.22 commits marked offsets every second and on Close).
// With hold, it hands out every record and never finishes by itself.
type handler struct {
	mu      sync.Mutex
	left    int
	hold    bool
	done    chan struct{}
	stopped bool
}

func (h *handler) Setup(s sarama.ConsumerGroupSession) error {
	emit(map[string]interface{}{
		"event": "assigned", "member_id": s.MemberID(), "generation_id": s.GenerationID(),
		"claims": s.Claims(),
	})
	return nil
}

func (h *handler) Cleanup(sarama.ConsumerGroupSession) error { return nil }

func (h *handler) ConsumeClaim(s sarama.ConsumerGroupSession, c sarama.ConsumerGroupClaim) error {
	for msg := range c.Messages() {
		h.mu.Lock()
		if h.hold {
			emit(record("consumed", msg))
			s.MarkMessage(msg, "")
			h.mu.Unlock()
			continue
		}
		if h.left > 0 {
			emit(record("consumed", msg))
			s.MarkMessage(msg, "")
			h.left--
		}
		if h.left == 0 && !h.stopped {
			h.stopped = true
			close(h.done)
		}
		h.mu.Unlock()
	}
	return nil
}

func group(ctx context.Context, addrs []string, config *sarama.Config, topic, groupID string, n int, hold bool) error {
	config.Consumer.Offsets.Initial = sarama.OffsetOldest
	config.Consumer.Return.Errors = true
	config.Consumer.Group.Session.Timeout = 6 * time.Second
	config.Consumer.Group.Heartbeat.Interval = time.Second
	config.Consumer.MaxWaitTime = 100 * time.Millisecond
	cg, err := sarama.NewConsumerGroup(addrs, groupID, config)
	if err != nil {
		return err
	}
	h := &handler{left: n, hold: hold, done: make(chan struct{})}
	if hold {
		go func() {
			// stdin EOF or SIGTERM/SIGINT: leave the group and exit 0.
			stop := make(chan struct{}, 2)
			go func() { io.Copy(ioutil.Discard, os.Stdin); stop <- struct{}{} }()
			sig := make(chan os.Signal, 1)
			signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
			go func() { <-sig; stop <- struct{}{} }()
			<-stop
			h.mu.Lock()
			if !h.stopped {
				h.stopped = true
				close(h.done)
			}
			h.mu.Unlock()
		}()
	}
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	loopErr := make(chan error, 1)
	go func() {
		// Consume returns at every rebalance; loop until we are done.
		for runCtx.Err() == nil {
			if err := cg.Consume(runCtx, []string{topic}, h); err != nil {
				loopErr <- err
				return
			}
		}
		loopErr <- nil
	}()
	var result error
	select {
	case <-h.done:
	case result = <-cg.Errors():
	case result = <-loopErr:
		if result == nil {
			result = fmt.Errorf("consumer group stopped before %d records", n)
		}
	case <-ctx.Done():
		result = fmt.Errorf("timed out waiting for %d records", n)
	}
	stop()
	// Close leaves the group and commits the offsets marked so far.
	if err := cg.Close(); err != nil && result == nil {
		result = err
	}
	return result
}

// metadata prints what a Metadata request (v5) answers: cluster id, controller,
// brokers, and the topic's partitions with their leaders and replicas; then
// what ClusterAdmin.ListTopics answers.
func metadata(addrs []string, config *sarama.Config, topic string) error {
	client, err := sarama.NewClient(addrs, config)
	if err != nil {
		return err
	}
	defer client.Close()
	if _, err := client.Partitions(topic); err != nil {
		return err
	}
	b, err := client.Controller()
	if err != nil {
		return err
	}
	md, err := b.GetMetadata(&sarama.MetadataRequest{Version: 5, Topics: []string{topic}})
	if err != nil {
		return err
	}
	brokers := []map[string]interface{}{}
	for _, br := range md.Brokers {
		brokers = append(brokers, map[string]interface{}{"node_id": br.ID(), "addr": br.Addr()})
	}
	clusterID := ""
	if md.ClusterID != nil {
		clusterID = *md.ClusterID
	}
	emit(map[string]interface{}{
		"event": "cluster", "cluster_id": clusterID, "controller": md.ControllerID, "brokers": brokers,
	})
	for _, t := range md.Topics {
		parts := []map[string]interface{}{}
		for _, p := range t.Partitions {
			parts = append(parts, map[string]interface{}{
				"partition": p.ID, "leader": p.Leader, "replicas": p.Replicas, "isr": p.Isr,
				"error_code": int16(p.Err),
			})
		}
		emit(map[string]interface{}{
			"event": "topic", "name": t.Name, "error_code": int16(t.Err), "partitions": parts,
		})
	}
	admin, err := sarama.NewClusterAdmin(addrs, config)
	if err != nil {
		return err
	}
	defer admin.Close()
	return listTopics(admin)
}

// administer runs one ClusterAdmin call and prints its answer.
func administer(addrs []string, config *sarama.Config, mode, topic, groupID string, partitions int32) error {
	admin, err := sarama.NewClusterAdmin(addrs, config)
	if err != nil {
		return err
	}
	defer admin.Close()
	switch mode {
	case "create-topic":
		detail := &sarama.TopicDetail{NumPartitions: partitions, ReplicationFactor: 1}
		if err := admin.CreateTopic(topic, detail, false); err != nil {
			return fmt.Errorf("ClusterAdmin.CreateTopic: %v", err)
		}
		emit(map[string]interface{}{"event": "created", "topic": topic})
		return topicsInMetadata(addrs, config)
	case "delete-topic":
		if err := admin.DeleteTopic(topic); err != nil {
			return fmt.Errorf("ClusterAdmin.DeleteTopic: %v", err)
		}
		emit(map[string]interface{}{"event": "deleted", "topic": topic})
		return topicsInMetadata(addrs, config)
	case "list-groups":
		groups, err := admin.ListConsumerGroups()
		if err != nil {
			return err
		}
		emit(map[string]interface{}{"event": "groups", "groups": groups})
	case "describe-group":
		groups, err := admin.DescribeConsumerGroups([]string{groupID})
		if err != nil {
			return err
		}
		for _, g := range groups {
			members := []map[string]interface{}{}
			for id, m := range g.Members {
				a, err := m.GetMemberAssignment()
				if err != nil {
					return err
				}
				members = append(members, map[string]interface{}{
					"member_id": id, "client_id": m.ClientId, "assignment": a.Topics,
				})
			}
			emit(map[string]interface{}{
				"event": "group", "group_id": g.GroupId, "error_code": int16(g.Err), "state": g.State,
				"protocol_type": g.ProtocolType, "protocol": g.Protocol, "members": members,
			})
		}
	case "group-offsets":
		parts := []int32{}
		for p := int32(0); p < partitions; p++ {
			parts = append(parts, p)
		}
		rsp, err := admin.ListConsumerGroupOffsets(groupID, map[string][]int32{topic: parts})
		if err != nil {
			return err
		}
		offsets := map[string]int64{}
		for p, block := range rsp.Blocks[topic] {
			if block.Err != sarama.ErrNoError {
				return block.Err
			}
			offsets[fmt.Sprint(p)] = block.Offset
		}
		emit(map[string]interface{}{"event": "offsets", "topic": topic, "offsets": offsets})
	}
	return nil
}

// topicsInMetadata prints every topic with its partition count, from a fresh
// client's all-topics Metadata request (which never auto-creates a topic).
func topicsInMetadata(addrs []string, config *sarama.Config) error {
	client, err := sarama.NewClient(addrs, config)
	if err != nil {
		return err
	}
	defer client.Close()
	names, err := client.Topics()
	if err != nil {
		return err
	}
	out := map[string]int{}
	for _, name := range names {
		parts, err := client.Partitions(name)
		if err != nil {
			return err
		}
		out[name] = len(parts)
	}
	emit(map[string]interface{}{"event": "topics", "topics": out})
	return nil
}

// listTopics prints what ClusterAdmin.ListTopics answers (it asks DescribeConfigs
// for each topic's configuration, too).
func listTopics(admin sarama.ClusterAdmin) error {
	topics, err := admin.ListTopics()
	if err != nil {
		return fmt.Errorf("ClusterAdmin.ListTopics: %v", err)
	}
	out := map[string]int32{}
	for name, d := range topics {
		out[name] = d.NumPartitions
	}
	emit(map[string]interface{}{"event": "admin-topics", "topics": out})
	return nil
}
