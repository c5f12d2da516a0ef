package config

import (
	"errors"
	"maps"
	"os"
	"path/filepath"
	"testing"
)

func TestParseSet_ValuesAreTakenWhole(t *testing.T) {
	jaas := `org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="a,b=c;d";`
	tests := []struct {
		name string
		sets []string
		want map[string]string
	}{
		{"comma list", []string{"listeners=PLAINTEXT://a:1,SSL://b:2"}, map[string]string{"listeners": "PLAINTEXT://a:1,SSL://b:2"}},
		{"equals inside the value", []string{"super.users=User:a=b;User:c"}, map[string]string{"super.users": "User:a=b;User:c"}},
		{"quotes in a JAAS string", []string{"listener.name.sasl_plaintext.plain.sasl.jaas.config=" + jaas},
			map[string]string{"listener.name.sasl_plaintext.plain.sasl.jaas.config": jaas}},
		{"empty value", []string{"advertised.listeners="}, map[string]string{"advertised.listeners": ""}},
		{"spaces around key and value", []string{" log.retention.hours = 1 "}, map[string]string{"log.retention.hours": "1"}},
		{"repeated key: last wins", []string{"num.partitions=2", "num.partitions=5"}, map[string]string{"num.partitions": "5"}},
		{"several keys", []string{"a.b=1", "c.d=x,y"}, map[string]string{"a.b": "1", "c.d": "x,y"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := map[string]string{}
			if err := ParseSet(got, tt.sets); err != nil {
				t.Fatal(err)
			}
			if !maps.Equal(got, tt.want) {
				t.Fatalf("ParseSet(%q) = %q, expected %q", tt.sets, got, tt.want)
			}
		})
	}
	for _, bad := range []string{"no-equals", "=value", " =value"} {
		if err := ParseSet(map[string]string{}, []string{bad}); !errors.Is(err, ErrInvalidBrokerConfig) {
			t.Errorf("ParseSet(%q) = %v, expected ErrInvalidBrokerConfig", bad, err)
		}
	}
}

func TestEnvPropertyName(t *testing.T) {
	for env, want := range map[string]string{
		"LOG_RETENTION_HOURS":                            "log.retention.hours",
		"LISTENER_NAME_SASL__PLAINTEXT_SASL_JAAS_CONFIG": "listener.name.sasl_plaintext.sasl.jaas.config",
		"SOME___DASHED_NAME":                             "some-dashed.name",
		"NUM_PARTITIONS":                                 "num.partitions",
	} {
		if got := EnvPropertyName(env); got != want {
			t.Errorf("EnvPropertyName(%q) = %q, expected %q", env, got, want)
		}
	}
}

func TestGatherProperties_PrecedenceAndSources(t *testing.T) {
	file := filepath.Join(t.TempDir(), "server.properties")
	contents := "# a comment\n" +
		"num.partitions=2\n" +
		"num.partitions=3\n" + // repeated: the last wins, as in Java
		"log.retention.hours=72\n" +
		"listeners=PLAINTEXT://a:1,SSL://b:2\n" +
		"sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username=\"u\" password=\"p,${x}\";\n" +
		"default.replication.factor=1\n"
	if err := os.WriteFile(file, []byte(contents), 0o644); err != nil {
		t.Fatal(err)
	}
	environ := []string{"PATH=/bin", "PETREL_SET_LOG_RETENTION_HOURS=24", "PETREL_SET_DEFAULT_REPLICATION_FACTOR=2", "PETREL_LOG_LEVEL=debug"}
	sets := []string{"default.replication.factor=3", "super.users=User:a,User:b"}
	props, sources, err := GatherProperties(file, environ, sets)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][2]string{
		"num.partitions":             {"3", SourceConfigFile},
		"listeners":                  {"PLAINTEXT://a:1,SSL://b:2", SourceConfigFile},
		"sasl.jaas.config":           {`org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password="p,${x}";`, SourceConfigFile},
		"log.retention.hours":        {"24", SourceEnvironment},
		"default.replication.factor": {"3", SourceSet},
		"super.users":                {"User:a,User:b", SourceSet},
	}
	if len(props) != len(want) {
		t.Errorf("props = %q, expected %d entries", props, len(want))
	}
	for name, w := range want {
		if props[name] != w[0] || sources[name] != w[1] {
			t.Errorf("%s = %q from %q, expected %q from %q", name, props[name], sources[name], w[0], w[1])
		}
	}
	if _, _, err := GatherProperties(filepath.Join(t.TempDir(), "missing"), nil, nil); !errors.Is(err, ErrInvalidBrokerConfig) {
		t.Errorf("missing file: %v, expected ErrInvalidBrokerConfig", err)
	}
	if _, _, err := GatherProperties("", []string{"PETREL_SET_=1"}, nil); !errors.Is(err, ErrInvalidBrokerConfig) {
		t.Errorf("PETREL_SET_ with no name: %v, expected ErrInvalidBrokerConfig", err)
	}
}
