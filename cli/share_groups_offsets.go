package cli

// `petrel share-groups reset-offsets` and `delete --delete-offsets`: an empty share
// group's share-partition start offsets set (AlterShareGroupOffsets) or its state for
// topics deleted (DeleteShareGroupOffsets), as kafka-share-groups.sh --reset-offsets
// and --delete-offsets do.

import (
	"errors"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/petrel-broker/petrel/cli/internal/clientcmd"
	"github.com/twmb/franz-go/pkg/kadm"
	ucli "github.com/urfave/cli/v2"
)

// shareResetScenarios are reset-offsets' scenarios, for messages.
const shareResetScenarios = "--to-earliest, --to-latest, --to-offset, --to-datetime, --by-duration"

// parseShareResetPlan reads the one scenario given; --by-duration becomes the
// --to-datetime of now minus the duration.
func parseShareResetPlan(c *ucli.Context, now time.Time) (resetPlan, error) {
	var plans []resetPlan
	for _, name := range []string{"to-earliest", "to-latest"} {
		if c.Bool(name) {
			plans = append(plans, resetPlan{name: name})
		}
	}
	if c.IsSet("to-offset") {
		n, err := strconv.ParseInt(c.String("to-offset"), 10, 64)
		if err != nil || n < 0 {
			return resetPlan{}, fmt.Errorf("bad --to-offset %q: want a non-negative number", c.String("to-offset"))
		}
		plans = append(plans, resetPlan{name: "to-offset", value: n})
	}
	if c.IsSet("to-datetime") {
		at, err := parseKafkaDateTime(c.String("to-datetime"))
		if err != nil {
			return resetPlan{}, err
		}
		plans = append(plans, resetPlan{name: "to-datetime", value: at.UnixMilli()})
	}
	if c.IsSet("by-duration") {
		d, err := parseISODuration(c.String("by-duration"))
		if err != nil {
			return resetPlan{}, err
		}
		plans = append(plans, resetPlan{name: "to-datetime", value: now.Add(-d).UnixMilli()})
	}
	switch len(plans) {
	case 1:
		return plans[0], nil
	case 0:
		return resetPlan{}, errors.New("reset-offsets needs one of " + shareResetScenarios)
	default:
		return resetPlan{}, errors.New("reset-offsets takes only one of " + shareResetScenarios)
	}
}

// isoDuration is Kafka's --by-duration format (java.time.Duration.parse): PnDTnHnMnS,
// each part optional, seconds possibly fractional.
var isoDuration = regexp.MustCompile(`^P(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d+)?)S)?)?$`)

// parseISODuration parses --by-duration.
func parseISODuration(s string) (time.Duration, error) {
	m := isoDuration.FindStringSubmatch(strings.ToUpper(strings.TrimSpace(s)))
	if m == nil || strings.HasSuffix(strings.ToUpper(s), "T") || len(s) < 3 {
		return 0, fmt.Errorf("bad --by-duration %q: want an ISO-8601 duration PnDTnHnMnS, such as PT1H or P1DT30M", s)
	}
	var d time.Duration
	for i, unit := range []time.Duration{24 * time.Hour, time.Hour, time.Minute, time.Second} {
		if m[i+1] == "" {
			continue
		}
		n, err := strconv.ParseFloat(m[i+1], 64)
		if err != nil {
			return 0, fmt.Errorf("bad --by-duration %q: %w", s, err)
		}
		d += time.Duration(n * float64(unit))
	}
	return d, nil
}

func runShareGroupsResetOffsets(c *ucli.Context) error {
	group, err := oneNameArg(c, "group", "GROUP")
	if err != nil {
		return err
	}
	plan, err := parseShareResetPlan(c, time.Now())
	if err != nil {
		return err
	}
	specs, err := parseResetScope(c)
	if err != nil {
		return err
	}
	cl, ctx, done, err := clientcmd.Connect(c)
	if err != nil {
		return err
	}
	defer done()
	adm := cl.Admin()
	if c.Bool("all-topics") {
		described, err := adm.DescribeShareGroupOffsets(ctx, group)
		if err != nil {
			return fmt.Errorf("describe share group offsets: %w", cl.Explain(err))
		}
		if d := described[group]; d.Err != nil {
			return shareGroupError(group, d.Err)
		}
		for topic := range described[group].Offsets {
			specs = append(specs, topicSpec{topic: topic})
		}
		if len(specs) == 0 {
			return fmt.Errorf("share group '%s' has no start offsets", group)
		}
	}
	offsets, err := planResetOffsets(ctx, cl, plan, specs, nil)
	if err != nil {
		return err
	}
	if c.Bool("execute") {
		resps, err := adm.AlterShareGroupOffsets(ctx, group, offsets)
		if err != nil {
			return shareGroupError(group, cl.Explain(err))
		}
		var failed []string
		resps.EachError(func(t string, p int32, err error) {
			failed = append(failed, fmt.Sprintf("%s-%d: %s", t, p, describeKafkaError(err)))
		})
		if len(failed) > 0 {
			return fmt.Errorf("reset offsets of share group '%s': %s", group, strings.Join(failed, "; "))
		}
	}
	return writeResetOffsets(c.App.Writer, group, offsets)
}

func runShareGroupsDeleteOffsets(c *ucli.Context) error {
	group, err := oneNameArg(c, "group", "GROUP")
	if err != nil {
		return err
	}
	topics := dedupe(c.StringSlice("topic"))
	if len(topics) == 0 {
		return errors.New("deleting share group offsets needs --topic")
	}
	cl, ctx, done, err := clientcmd.Connect(c)
	if err != nil {
		return err
	}
	defer done()
	resps, err := cl.Admin().DeleteShareGroupOffsets(ctx, group, topics...)
	if err != nil {
		return shareGroupError(group, cl.Explain(err))
	}
	out, failed := formatShareOffsetsDeleted(topics, resps)
	if _, err := io.WriteString(c.App.Writer, out); err != nil {
		return err
	}
	if len(failed) > 0 {
		return fmt.Errorf("deleting the offsets of share group '%s' failed for %s", group, strings.Join(failed, ", "))
	}
	return nil
}

// formatShareOffsetsDeleted is kafka-share-groups.sh --delete-offsets' TOPIC STATUS
// table, topics sorted, and the topics that failed.
func formatShareOffsetsDeleted(topics []string, resps kadm.DeleteShareGroupOffsetsResponses) (string, []string) {
	sorted := append([]string(nil), topics...)
	sort.Strings(sorted)
	var failed []string
	t := table{columns: []column{{"TOPIC", 15, true}, {"STATUS", 0, false}}}
	for _, topic := range sorted {
		status := "Successful"
		if err, ok := resps.Lookup(topic); !ok {
			status = "Error: missing from the broker's answer"
		} else if err != nil {
			status = "Error: " + describeKafkaError(err)
		}
		if status != "Successful" {
			failed = append(failed, topic)
		}
		t.add(topic, status)
	}
	var out strings.Builder
	out.WriteByte('\n')
	t.write(&out)
	return out.String(), failed
}
