package cli

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/petrel-broker/petrel/cli/internal/clientcmd"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	ucli "github.com/urfave/cli/v2"
)

// runTopicsAlter is `petrel topics alter TOPIC --partitions N [--replica-assignment
// 1:2,2:0]`: CreatePartitions, printing nothing on success as kafka-topics.sh --alter.
func runTopicsAlter(c *ucli.Context) error {
	topic, err := oneNameArg(c, "topic", "TOPIC")
	if err != nil {
		return err
	}
	partitions := c.Int("partitions")
	if partitions <= 0 || partitions > 1<<31-1 {
		return fmt.Errorf("--partitions must be positive, got %d", partitions)
	}
	assignment, err := parseReplicaAssignment(c.String("replica-assignment"))
	if err != nil {
		return err
	}
	cl, ctx, done, err := clientcmd.Connect(c)
	if err != nil {
		return err
	}
	defer done()
	req := kmsg.NewPtrCreatePartitionsRequest()
	req.TimeoutMillis = int32(cl.Timeout().Milliseconds() * 8 / 10)
	rt := kmsg.NewCreatePartitionsRequestTopic()
	rt.Topic, rt.Count = topic, int32(partitions)
	for _, replicas := range assignment {
		a := kmsg.NewCreatePartitionsRequestTopicAssignment()
		a.Replicas = replicas
		rt.Assignment = append(rt.Assignment, a)
	}
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl.Client)
	if err != nil {
		return fmt.Errorf("alter topic %q: %w", topic, cl.Explain(err))
	}
	if len(resp.Topics) != 1 {
		return fmt.Errorf("alter topic %q: the broker answered %d topics", topic, len(resp.Topics))
	}
	if code := resp.Topics[0].ErrorCode; code != 0 {
		err := kerr.ErrorForCode(code)
		if errors.Is(err, kerr.UnknownTopicOrPartition) {
			return fmt.Errorf("topic %q does not exist", topic)
		}
		return fmt.Errorf("alter topic %q: %w", topic, kafkaError(err, derefString(resp.Topics[0].ErrorMessage)))
	}
	return nil
}

// parseReplicaAssignment parses kafka-topics.sh's --replica-assignment: partitions
// separated by commas, broker ids by colons.
func parseReplicaAssignment(s string) ([][]int32, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var out [][]int32
	for _, part := range strings.Split(s, ",") {
		var replicas []int32
		for _, id := range strings.Split(part, ":") {
			n, err := strconv.ParseInt(strings.TrimSpace(id), 10, 32)
			if err != nil || n < 0 {
				return nil, fmt.Errorf("bad --replica-assignment %q: want broker ids like 1:2,2:0", s)
			}
			replicas = append(replicas, int32(n))
		}
		out = append(out, replicas)
	}
	return out, nil
}
