package cli

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/petrel-broker/petrel/cli/internal/clientcmd"
	"github.com/petrel-broker/petrel/metadata"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	ucli "github.com/urfave/cli/v2"
)

// featuresCommand is `petrel features describe|upgrade|downgrade|disable`, in the shape
// of kafka-features.sh (KIP-584, KIP-1022): the finalized feature levels read from
// ApiVersions, changed through UpdateFeatures.
func featuresCommand() *ucli.Command {
	change := func(name, usage string, flags ...ucli.Flag) *ucli.Command {
		return &ucli.Command{Name: name, Usage: usage, Action: runFeaturesChange,
			Flags: clientcmd.WithFlags(append(flags,
				&ucli.BoolFlag{Name: "dry-run", Usage: "validate the change without performing it"})...)}
	}
	metadataFlag := &ucli.StringFlag{Name: "metadata", Usage: "the metadata.version, as 4.2 or 4.2-IV1"}
	featureFlag := &ucli.StringSliceFlag{Name: "feature", Usage: "a feature and level, as transaction.version=2 (repeatable)"}
	unsafeFlag := &ucli.BoolFlag{Name: "unsafe", Usage: "allow a lossy downgrade"}
	return &ucli.Command{
		Name:  "features",
		Usage: "describe and change the cluster's finalized feature levels, as kafka-features.sh",
		Subcommands: []*ucli.Command{
			{Name: "describe", Usage: "describe each feature's supported range and finalized level",
				Flags: withOutputFlags(), Action: runFeaturesDescribe},
			change("upgrade", "upgrade features", metadataFlag, featureFlag),
			change("downgrade", "downgrade features", metadataFlag, featureFlag, unsafeFlag),
			change("disable", "disable features (level 0)",
				&ucli.StringSliceFlag{Name: "feature", Usage: "a feature to disable (repeatable)"}, unsafeFlag),
		},
	}
}

// featureLevelText prints a level as kafka-features.sh does: metadata.version by its
// release name.
func featureLevelText(name string, level int16) string {
	if name == metadata.FeatureMetadataVersion && level > 0 {
		return metadata.MetadataVersionName(level)
	}
	return strconv.Itoa(int(level))
}

func runFeaturesDescribe(c *ucli.Context) error {
	asJSON, err := parseOutputArgs(c)
	if err != nil {
		return err
	}
	cl, ctx, done, err := clientcmd.Connect(c)
	if err != nil {
		return err
	}
	defer done()
	resp, err := kmsg.NewPtrApiVersionsRequest().RequestWith(ctx, cl)
	if err != nil {
		return fmt.Errorf("describe features: %w", cl.Explain(err))
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return fmt.Errorf("describe features: %w", err)
	}
	type feature struct {
		Name           string `json:"feature"`
		SupportedMin   int16  `json:"supported_min_version"`
		SupportedMax   int16  `json:"supported_max_version"`
		FinalizedLevel int16  `json:"finalized_version_level"`
		Epoch          int64  `json:"epoch"`
	}
	finalized := map[string]int16{}
	for _, f := range resp.FinalizedFeatures {
		finalized[f.Name] = f.MaxVersionLevel
	}
	var out []feature
	for _, f := range resp.SupportedFeatures {
		out = append(out, feature{f.Name, f.MinVersion, f.MaxVersion, finalized[f.Name], resp.FinalizedFeaturesEpoch})
	}
	slices.SortFunc(out, func(a, b feature) int { return strings.Compare(a.Name, b.Name) })
	if asJSON {
		return writeJSON(c.App.Writer, out)
	}
	var b strings.Builder
	for _, f := range out {
		fmt.Fprintf(&b, "Feature: %s\tSupportedMinVersion: %s\tSupportedMaxVersion: %s\tFinalizedVersionLevel: %s\tEpoch: %d\n",
			f.Name, featureLevelText(f.Name, f.SupportedMin), featureLevelText(f.Name, f.SupportedMax),
			featureLevelText(f.Name, f.FinalizedLevel), f.Epoch)
	}
	_, err = fmt.Fprint(c.App.Writer, b.String())
	return err
}

// featureChanges reads --metadata and --feature (--feature names alone for disable).
func featureChanges(c *ucli.Context, op string) (map[string]int16, error) {
	levels := map[string]int16{}
	if op != "disable" && c.IsSet("metadata") {
		mv, ok := metadata.ParseMetadataVersion(c.String("metadata"))
		if !ok {
			return nil, fmt.Errorf("--metadata: unknown metadata.version %q", c.String("metadata"))
		}
		levels[metadata.FeatureMetadataVersion] = mv
	}
	for _, f := range c.StringSlice("feature") {
		if op == "disable" {
			levels[f] = 0
			continue
		}
		name, value, ok := strings.Cut(f, "=")
		level, err := strconv.ParseInt(value, 10, 16)
		if !ok || name == "" || err != nil {
			return nil, fmt.Errorf("--feature %q: want a feature and a level, as transaction.version=2", f)
		}
		if _, dup := levels[name]; dup {
			return nil, fmt.Errorf("--feature %q: %s is given twice", f, name)
		}
		levels[name] = int16(level)
	}
	if len(levels) == 0 {
		if op == "disable" {
			return nil, errors.New("name at least one --feature to disable")
		}
		return nil, errors.New("give --metadata or at least one --feature")
	}
	return levels, nil
}

func runFeaturesChange(c *ucli.Context) error {
	if _, err := clientcmd.Args(c); err != nil {
		return err
	}
	op := c.Command.Name
	levels, err := featureChanges(c, op)
	if err != nil {
		return err
	}
	typ := int8(metadata.Upgrade)
	if op != "upgrade" {
		typ = int8(metadata.SafeDowngrade)
		if c.Bool("unsafe") {
			typ = int8(metadata.UnsafeDowngrade)
		}
	}
	cl, ctx, done, err := clientcmd.Connect(c)
	if err != nil {
		return err
	}
	defer done()
	req := kmsg.NewPtrUpdateFeaturesRequest()
	req.TimeoutMillis = int32(cl.Timeout().Milliseconds() * 8 / 10)
	req.ValidateOnly = c.Bool("dry-run")
	names := slices.Sorted(maps.Keys(levels))
	for _, name := range names {
		u := kmsg.NewUpdateFeaturesRequestFeatureUpdate()
		u.Feature, u.MaxVersionLevel, u.UpgradeType = name, levels[name], typ
		u.AllowDowngrade = typ != int8(metadata.Upgrade)
		req.FeatureUpdates = append(req.FeatureUpdates, u)
	}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return fmt.Errorf("%s features: %w", op, cl.Explain(err))
	}
	results := map[string]error{}
	for _, name := range names {
		results[name] = kafkaError(kerr.ErrorForCode(resp.ErrorCode), derefString(resp.ErrorMessage))
	}
	for _, r := range resp.Results { // before v2: each feature's own
		results[r.Feature] = kafkaError(kerr.ErrorForCode(r.ErrorCode), derefString(r.ErrorMessage))
	}
	done2 := map[string]string{"upgrade": "upgraded", "downgrade": "downgraded", "disable": "disabled"}[op]
	failed := 0
	var b strings.Builder
	for _, name := range names {
		level := featureLevelText(name, levels[name])
		switch {
		case results[name] != nil:
			failed++
			fmt.Fprintf(&b, "Could not %s %s to %s. %v\n", op, name, level, results[name])
		case req.ValidateOnly:
			fmt.Fprintf(&b, "%s can be %s to %s.\n", name, done2, level)
		case op == "disable":
			fmt.Fprintf(&b, "%s was disabled.\n", name)
		default:
			fmt.Fprintf(&b, "%s was %s to %s.\n", name, done2, level)
		}
	}
	if _, err := fmt.Fprint(c.App.Writer, b.String()); err != nil {
		return err
	}
	if failed > 0 {
		return fmt.Errorf("%d out of %d operation(s) failed", failed, len(names))
	}
	return nil
}
