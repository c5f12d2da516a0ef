package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/petrel-broker/petrel/cli/internal/clientcmd"
	"github.com/twmb/franz-go/pkg/kadm"
	ucli "github.com/urfave/cli/v2"
)

// deleteRecordsCommand is `petrel delete-records --offset-json-file F`, as
// kafka-delete-records.sh: F is {"partitions": [{"topic": "t", "partition": 0,
// "offset": 10}], "version": 1}; offset -1 deletes up to the high watermark. The
// broker answers once every replica has moved its log start offset (the low
// watermark), which for a cut-off follower takes until the controller fences it
// (broker.session.timeout.ms, 9 s): --timeout defaults to 30 s, Kafka's admin
// request.timeout.ms, so that wait fits.
func deleteRecordsCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "delete-records",
		Usage: "delete records before an offset (move the log start offset), as kafka-delete-records.sh",
		Flags: clientcmd.WithFlagsTimeout(deleteRecordsTimeout,
			&ucli.StringFlag{Name: "offset-json-file", Usage: `{"partitions": [{"topic": "t", "partition": 0, "offset": 10}], "version": 1}`, Required: true},
		),
		Action: runDeleteRecords,
	}
}

// deleteRecordsTimeout is delete-records' --timeout default: Kafka's admin
// request.timeout.ms, above broker.session.timeout.ms.
const deleteRecordsTimeout = 30 * time.Second

type deleteRecordsFile struct {
	Partitions []struct {
		Topic     string `json:"topic"`
		Partition *int32 `json:"partition"`
		Offset    *int64 `json:"offset"`
	} `json:"partitions"`
	Version int `json:"version"`
}

func runDeleteRecords(c *ucli.Context) error {
	if _, err := clientcmd.Args(c); err != nil {
		return err
	}
	path := c.String("offset-json-file")
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var f deleteRecordsFile
	if err := json.Unmarshal(raw, &f); err != nil {
		return fmt.Errorf("%s: %v", path, err)
	}
	if len(f.Partitions) == 0 {
		return fmt.Errorf("%s lists no partitions", path)
	}
	var offsets kadm.Offsets
	for _, p := range f.Partitions {
		if p.Topic == "" || p.Partition == nil || p.Offset == nil || *p.Partition < 0 || *p.Offset < -1 {
			return fmt.Errorf("%s: every entry needs a topic, a partition and an offset (-1: the high watermark)", path)
		}
		offsets.Add(kadm.Offset{Topic: p.Topic, Partition: *p.Partition, At: *p.Offset})
	}
	cl, ctx, done, err := clientcmd.Connect(c)
	if err != nil {
		return err
	}
	defer done()
	fmt.Fprintln(c.App.Writer, "Executing records delete operation")
	resp, err := cl.Admin().DeleteRecords(ctx, offsets)
	if err != nil {
		return fmt.Errorf("delete records: %w", cl.Explain(err))
	}
	var lines []string
	failed := 0
	resp.Each(func(r kadm.DeleteRecordsResponse) {
		if r.Err != nil {
			failed++
			lines = append(lines, fmt.Sprintf("partition: %s-%d\terror: %v", r.Topic, r.Partition, r.Err))
			return
		}
		lines = append(lines, fmt.Sprintf("partition: %s-%d\tlow_watermark: %d", r.Topic, r.Partition, r.LowWatermark))
	})
	sort.Strings(lines)
	fmt.Fprintln(c.App.Writer, "Records delete operation completed:")
	fmt.Fprintln(c.App.Writer, strings.Join(lines, "\n"))
	if failed > 0 {
		return fmt.Errorf("records of %d partition(s) could not be deleted", failed)
	}
	return nil
}

// logDirsCommand is `petrel log-dirs describe`, as kafka-log-dirs.sh --describe: every
// broker's (or --broker-list's) log directories and replicas, as Kafka's JSON.
func logDirsCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "log-dirs",
		Usage: "describe log directories, as kafka-log-dirs.sh",
		Subcommands: []*ucli.Command{{
			Name:  "describe",
			Usage: "each broker's log directories with their replicas' size and offset lag",
			Flags: withOutputFlags(
				&ucli.StringFlag{Name: "broker-list", Usage: "broker ids: 0,1,2 (default: every broker)"},
				&ucli.StringFlag{Name: "topic-list", Usage: "topics: t1,t2 (default: every topic)"},
			),
			Action: runLogDirsDescribe,
		}},
	}
}

// Kafka's kafka-log-dirs.sh JSON.
type logDirsJSON struct {
	Brokers []logDirsBroker `json:"brokers"`
	Version int             `json:"version"`
}

type logDirsBroker struct {
	Broker  int32        `json:"broker"`
	LogDirs []logDirJSON `json:"logDirs"`
}

type logDirJSON struct {
	LogDir     string             `json:"logDir"`
	Error      *string            `json:"error"`
	Partitions []logDirsPartition `json:"partitions"`
}

type logDirsPartition struct {
	Partition string `json:"partition"`
	Size      int64  `json:"size"`
	OffsetLag int64  `json:"offsetLag"`
	IsFuture  bool   `json:"isFuture"`
	// RemoteSize is a tiered partition's bytes in remote storage (log_dirs_remote.go),
	// absent for other partitions: Petrel's addition to Kafka's JSON.
	RemoteSize *int64 `json:"remoteSize,omitempty"`
}

func runLogDirsDescribe(c *ucli.Context) error {
	if _, err := clientcmd.Args(c); err != nil {
		return err
	}
	var brokers []int32
	for _, s := range strings.Split(c.String("broker-list"), ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		id, err := strconv.ParseInt(s, 10, 32)
		if err != nil || id < 0 {
			return fmt.Errorf("bad --broker-list %q: want broker ids like 0,1,2", c.String("broker-list"))
		}
		brokers = append(brokers, int32(id))
	}
	asJSON, err := jsonOutput(c)
	if err != nil {
		return err
	}
	var topics []string
	for _, s := range strings.Split(c.String("topic-list"), ",") {
		if s = strings.TrimSpace(s); s != "" {
			topics = append(topics, s)
		}
	}
	cl, ctx, done, err := clientcmd.Connect(c)
	if err != nil {
		return err
	}
	defer done()
	adm := cl.Admin()
	if !asJSON {
		fmt.Fprintln(c.App.Writer, "Querying brokers for log directories information")
	}
	var set kadm.TopicsSet
	if len(topics) > 0 {
		details, err := adm.ListTopics(ctx, topics...)
		if err != nil {
			return fmt.Errorf("list topics: %w", cl.Explain(err))
		}
		set = details.TopicsSet()
	}
	dirs, err := adm.DescribeAllLogDirs(ctx, set)
	if err != nil {
		return fmt.Errorf("describe log dirs: %w", cl.Explain(err))
	}
	remote := remoteSizes(ctx, cl, topics)
	var out logDirsJSON
	out.Version = 1
	var ids []string
	for id, ds := range dirs {
		if len(brokers) > 0 && !containsID(brokers, id) {
			continue
		}
		ids = append(ids, strconv.Itoa(int(id)))
		b := logDirsBroker{Broker: id}
		for _, d := range ds.Sorted() {
			ld := logDirJSON{LogDir: d.Dir, Partitions: []logDirsPartition{}}
			if d.Err != nil {
				msg := d.Err.Error()
				ld.Error = &msg
			}
			for _, p := range d.Topics.Sorted() {
				lp := logDirsPartition{Partition: fmt.Sprintf("%s-%d", p.Topic, p.Partition),
					Size: p.Size, OffsetLag: p.OffsetLag, IsFuture: p.IsFuture}
				if size, ok := remote[id][p.Topic][p.Partition]; ok {
					lp.RemoteSize = &size
				}
				ld.Partitions = append(ld.Partitions, lp)
			}
			b.LogDirs = append(b.LogDirs, ld)
		}
		out.Brokers = append(out.Brokers, b)
	}
	if len(out.Brokers) == 0 && len(brokers) > 0 {
		return errors.New("none of the brokers in --broker-list answered")
	}
	sort.Slice(out.Brokers, func(i, j int) bool { return out.Brokers[i].Broker < out.Brokers[j].Broker })
	sort.Strings(ids)
	if asJSON { // Kafka's JSON alone, without the tool's two text lines
		return writeJSON(c.App.Writer, out)
	}
	raw, err := json.Marshal(out)
	if err != nil {
		return err
	}
	fmt.Fprintf(c.App.Writer, "Received log directory information from brokers %s\n%s\n", strings.Join(ids, ","), raw)
	return nil
}

func containsID(ids []int32, id int32) bool {
	for _, v := range ids {
		if v == id {
			return true
		}
	}
	return false
}
