package clientcmd

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	ucli "github.com/urfave/cli/v2"
)

func TestArgs_FlagsAfterPositionals(t *testing.T) {
	cases := []struct {
		args    []string
		want    []string
		count   int
		verbose bool
		names   []string
		wantErr string
	}{
		{args: []string{"a"}, want: []string{"a"}},
		{args: []string{"--count", "3", "a"}, want: []string{"a"}, count: 3},
		{args: []string{"a", "--count", "3", "b"}, want: []string{"a", "b"}, count: 3},
		{args: []string{"a", "--count=-1", "--verbose"}, want: []string{"a"}, count: -1, verbose: true},
		{args: []string{"a", "-c", "-2", "-v"}, want: []string{"a"}, count: -2, verbose: true},
		{args: []string{"a", "--name", "x", "--name=y"}, want: []string{"a"}, names: []string{"x", "y"}},
		{args: []string{"--name", "x", "a", "--name", "y"}, want: []string{"a"}, names: []string{"x", "y"}},
		{args: []string{"a", "--", "--count", "-"}, want: []string{"a", "--count", "-"}},
		{args: []string{"a", "-"}, want: []string{"a", "-"}},
		{args: []string{"a", "--nope"}, wantErr: "flag provided but not defined: --nope"},
		{args: []string{"a", "--count"}, wantErr: "flag needs an argument: --count"},
		{args: []string{"a", "--count", "many"}, wantErr: `invalid value "many" for flag --count`},
	}
	for _, tc := range cases {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var got []string
			var gotErr error
			var count int
			var verbose bool
			var names []string
			app := &ucli.App{
				Writer: &bytes.Buffer{}, ErrWriter: &bytes.Buffer{},
				Commands: []*ucli.Command{{
					Name: "cmd",
					Flags: []ucli.Flag{
						&ucli.IntFlag{Name: "count", Aliases: []string{"c"}},
						&ucli.BoolFlag{Name: "verbose", Aliases: []string{"v"}},
						&ucli.StringSliceFlag{Name: "name"},
					},
					Action: func(c *ucli.Context) error {
						got, gotErr = Args(c)
						count, verbose, names = c.Int("count"), c.Bool("verbose"), c.StringSlice("name")
						return nil
					},
				}},
			}
			if err := app.Run(append([]string{"test", "cmd"}, tc.args...)); err != nil {
				t.Fatal(err)
			}
			if tc.wantErr != "" {
				if gotErr == nil || !strings.Contains(gotErr.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", gotErr, tc.wantErr)
				}
				return
			}
			if gotErr != nil {
				t.Fatal(gotErr)
			}
			if !slices.Equal(got, tc.want) || count != tc.count || verbose != tc.verbose || !slices.Equal(names, tc.names) {
				t.Fatalf("args %q count %d verbose %v names %q; want %q %d %v %q", got, count, verbose, names, tc.want, tc.count, tc.verbose, tc.names)
			}
		})
	}
}
