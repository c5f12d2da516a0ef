package config

import (
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
)

var updateDocs = flag.Bool("update", false, "rewrite docs/configuration.md from the property table")

const configurationDocPath = "../docs/configuration.md"

// TestConfigurationDoc holds docs/configuration.md to the property table. After changing
// the table, regenerate the page: go test ./config -run TestConfigurationDoc -update
func TestConfigurationDoc(t *testing.T) {
	want := configurationDoc()
	if *updateDocs {
		if err := os.WriteFile(configurationDocPath, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	got, err := os.ReadFile(configurationDocPath)
	if err != nil {
		t.Fatalf("%v; generate it with: go test ./config -run TestConfigurationDoc -update", err)
	}
	if string(got) != want {
		gotLines, wantLines := strings.Split(string(got), "\n"), strings.Split(want, "\n")
		for i := range max(len(gotLines), len(wantLines)) {
			g, w := lineAt(gotLines, i), lineAt(wantLines, i)
			if g != w {
				t.Fatalf("docs/configuration.md differs from the property table at line %d:\n  file:  %q\n  table: %q\nregenerate it with: go test ./config -run TestConfigurationDoc -update", i+1, g, w)
			}
		}
	}
}

func lineAt(lines []string, i int) string {
	if i < len(lines) {
		return lines[i]
	}
	return "(end of file)"
}

// configurationDoc renders docs/configuration.md from the tables.
func configurationDoc() string {
	var b strings.Builder
	b.WriteString(configurationDocIntro)

	b.WriteString("\n## Broker properties\n\n")
	b.WriteString("| property | type | default | valid values | description |\n|---|---|---|---|---|\n")
	brokerDefs := slices.Clone(BrokerDefs)
	slices.SortFunc(brokerDefs, func(a, b Def) int { return strings.Compare(a.Name, b.Name) })
	for _, d := range brokerDefs {
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s |\n", d.Name, docType(d), docDefault(d.Default), docValid(d), docDescription(d))
	}

	b.WriteString("\n## Topic configs and their broker defaults\n\n")
	b.WriteString("Each topic config can be set per topic (`petrel topics create t --config key=value`,\n" +
		"or CreateTopics from any Kafka client). Its cluster-wide default is the broker property\n" +
		"in the second column (same type and validator, except that any negative\n" +
		"`log.retention.ms` means -1, as in Kafka), and Kafka's default applies when neither is\n" +
		"set. A value outside the validator is INVALID_CONFIG with Kafka's message.\n\n")
	b.WriteString("| topic config | broker property | type | default | valid values | description |\n|---|---|---|---|---|---|\n")
	topicDefs := slices.Clone(TopicDefs)
	slices.SortFunc(topicDefs, func(a, b Def) int { return strings.Compare(a.Name, b.Name) })
	for _, d := range topicDefs {
		fmt.Fprintf(&b, "| `%s` | `%s` | %s | %s | %s | %s |\n", d.Name, d.BrokerSynonym, docType(d), docDefault(d.Default), docValid(d), docDescription(d))
	}

	b.WriteString("\n## Group configs\n\n")
	b.WriteString("Each consumer group (KIP-848) and share group (KIP-932) can have configs of its own:\n" +
		"the GROUP config resource of DescribeConfigs, IncrementalAlterConfigs and AlterConfigs\n" +
		"(`petrel configs alter --entity-type groups --entity-name G --add-config key=value`, or\n" +
		"kafka-configs.sh). A group's value overrides the broker property in the second column\n" +
		"(none: the default column); it must lie within that property's `min` and `max` bounds\n" +
		"(`group.consumer.min.*`, `group.share.min.*`, ...), else INVALID_CONFIG. DescribeConfigs\n" +
		"reports a group's own value as GROUP_CONFIG. The `consumer.*` configs apply to consumer\n" +
		"groups, the `share.*` ones to share groups.\n\n")
	b.WriteString("| group config | broker property | type | default | valid values | description |\n|---|---|---|---|---|---|\n")
	for _, d := range GroupDefs {
		synonym := "none"
		if d.BrokerSynonym != "" {
			synonym = "`" + d.BrokerSynonym + "`"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s | %s |\n", d.Name, synonym, docType(d), docDefault(d.Default), docValid(d), docDescription(d))
	}

	b.WriteString("\n## Kafka broker properties Petrel does not implement yet\n\n")
	b.WriteString("Supplying one of these logs a warning that names it as not implemented (an error\n" +
		"with `--strict-config`); the value is not used.\n\n")
	b.WriteString("| property | why, or what Petrel does instead |\n|---|---|\n")
	for _, u := range sortedUnimplemented(unimplementedBrokerConfigs, brokerByName) {
		fmt.Fprintf(&b, "| `%s` | %s |\n", u.Name, docEscape(u.Note))
	}
	for _, u := range unimplementedBrokerConfigPrefixes {
		fmt.Fprintf(&b, "| `%s*` | %s |\n", u.Name, docEscape(u.Note))
	}

	b.WriteString("\n## Kafka topic configs Petrel does not implement yet\n\n")
	b.WriteString("CreateTopics refuses these with INVALID_CONFIG (`Petrel does not implement topic config\n" +
		"NAME yet (...)`) rather than accept a setting it would not honour.\n\n")
	b.WriteString("| topic config | why |\n|---|---|\n")
	for _, u := range sortedUnimplemented(unimplementedTopicConfigs, topicByName) {
		fmt.Fprintf(&b, "| `%s` | %s |\n", u.Name, docEscape(u.Note))
	}
	return b.String()
}

// sortedUnimplemented is the list by name, without names the table now defines.
func sortedUnimplemented(list []Unimplemented, table map[string]Def) []Unimplemented {
	out := slices.DeleteFunc(slices.Clone(list), func(u Unimplemented) bool { _, ok := table[u.Name]; return ok })
	slices.SortFunc(out, func(a, b Unimplemented) int { return strings.Compare(a.Name, b.Name) })
	return out
}

func docType(d Def) string {
	t := strings.ToLower(typeNames[d.Type])
	if d.ReadOnly {
		t += ", read-only"
	}
	return t
}

var typeNames = map[Type]string{TypeBoolean: "BOOLEAN", TypeString: "STRING", TypeInt: "INT", TypeLong: "LONG", TypeDouble: "DOUBLE", TypeList: "LIST", TypePassword: "PASSWORD"}

func docDefault(v string) string {
	if v == "" {
		return "null"
	}
	return "`" + v + "`"
}

func docValid(d Def) string {
	s := ""
	if d.Validator != nil {
		s = "`" + d.Validator.String() + "`"
	}
	if d.Limit != nil {
		verb := "accepts"
		if d.Limit.warnOnly {
			verb = "acts on"
		}
		if s != "" {
			s += "; "
		}
		s += fmt.Sprintf("Petrel %s only %s", verb, strings.Join(d.Limit.values, ", "))
	}
	return s
}

func docDescription(d Def) string {
	var petrel []string
	switch {
	case d.Flag != "" && ListenerFlagProperty(d.Name):
		petrel = append(petrel, "`"+d.Flag+"` is its shorthand.")
	case d.Flag != "":
		petrel = append(petrel, "set by `"+d.Flag+"`; the property is ignored with a warning.")
	}
	if d.Note != "" {
		petrel = append(petrel, docEscape(d.Note))
	}
	if len(petrel) == 0 {
		return docEscape(d.Doc)
	}
	return docEscape(d.Doc) + " **Petrel:** " + strings.Join(petrel, " ")
}

func docEscape(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

const configurationDocIntro = `# Configuration

<!-- Generated from config/defs.go, config/groups.go and config/defs_unimplemented.go by
     go test ./config -run TestConfigurationDoc -update
     Do not edit by hand: the test fails when this page and the tables disagree. -->

Petrel takes Apache Kafka's broker property names, types, defaults and validators
(Kafka 3.9's KafkaConfig and LogConfig). This page lists every property Petrel knows.

## Where properties come from

In increasing precedence (a later source overrides an earlier one):

1. Kafka's default (source ` + "`default`" + `).
2. ` + "`--config server.properties`" + `: a Java properties file (source ` + "`config file`" + `).
   ` + "`${...}`" + ` is kept as written, not expanded. A key given twice keeps its last value.
3. Environment variables ` + "`PETREL_SET_<NAME>`" + ` (source ` + "`environment`" + `). As in
   Apache Kafka's Docker image, after the prefix ` + "`_`" + ` is ` + "`.`" + `, ` + "`__`" + ` is ` + "`_`" + ` and
   ` + "`___`" + ` is ` + "`-`" + `, and the name is lower-cased:
   ` + "`PETREL_SET_LOG_RETENTION_HOURS=24`" + ` is ` + "`log.retention.hours=24`" + `, and
   ` + "`PETREL_SET_LISTENER_NAME_SASL__PLAINTEXT_SASL_JAAS_CONFIG`" + ` is
   ` + "`listener.name.sasl_plaintext.sasl.jaas.config`" + `.
4. ` + "`--set key=value`" + ` (repeatable; source ` + "`--set`" + `). The value is everything after the
   first ` + "`=`" + `, kept whole: commas, further ` + "`=`" + ` and quotes stay in it, so
   ` + "`--set listeners=PLAINTEXT://a:1,SSL://b:2`" + ` and JAAS strings work. A key given twice
   keeps its last value.

Dynamic configs (source ` + "`dynamic`" + `) are the per-topic configs set through the Kafka API
(CreateTopics); DescribeConfigs reports them as DYNAMIC_TOPIC_CONFIG with their synonyms.

` + "`petrel dev`" + ` takes the same ` + "`--config`" + `, ` + "`--set`" + ` and ` + "`--strict-config`" + ` and gives the
properties to every node.

## Listeners

One rule decides where a node listens and what it advertises, checked at start (and by
` + "`--print-config`" + `); a node that breaks it refuses to start with the message quoted:

* **Client listeners** are ` + "`listeners`" + ` (NAME://host:port,...), or ` + "`--listen host:port`" + `,
  its shorthand for ` + "`listeners=PLAINTEXT://host:port`" + `; neither: ` + "`PLAINTEXT://127.0.0.1:9092`" + `.
  Give one or the other, from any source: ` + "`--listen`" + ` together with a different
  ` + "`listeners`" + ` (config file, environment or ` + "`--set`" + `) is refused
  (` + "`--listen 127.0.0.1:9092 conflicts with listeners=SASL_SSL://... (config file)`" + `).
* **Protocols**: every listener name needs an entry in ` + "`listener.security.protocol.map`" + `
  (a name that is a protocol needs none with the default map):
  ` + "`No security protocol defined for listener EXTERNAL`" + `.
* **Advertised addresses**: a listener is advertised at its ` + "`advertised.listeners`" + `
  entry, or (the first listener) at ` + "`--advertised host:port`" + `, its shorthand, else at
  its own address. ` + "`--advertised`" + ` with a different ` + "`advertised.listeners`" + ` is refused;
  ` + "`advertised.listeners`" + ` may name only listeners of ` + "`listeners`" + ` (Kafka's
  ` + "`advertised.listeners listener names must be equal to or a subset of the ones defined in listeners`" + `).
  An advertised address on 0.0.0.0 or ::, given or taken from the listener, is refused
  as Kafka refuses it: ` + "`advertised.listeners cannot use the nonroutable meta-address 0.0.0.0. Use a routable IP address.`" + `
  (so ` + "`--listen 0.0.0.0:9092`" + ` needs ` + "`--advertised host:9092`" + `). An empty host
  (` + "`PLAINTEXT://:9092`" + `, every interface) is advertised as the machine's host name, as Kafka does.
* **The controller listener**: a listener named in ` + "`controller.listener.names`" + ` (a Kafka
  KRaft file's ` + "`CONTROLLER://:9093`" + `) is the Raft listener, never a client port: its
  address is ` + "`--raft-listen`" + `'s (both given and different: refused), it is not served
  to Kafka clients, not advertised, and an ` + "`advertised.listeners`" + ` entry for it is not used.
  One such listener at most; its protocol must be PLAINTEXT unless
  ` + "`petrel.raft.security.protocol`" + ` decides the Raft transport's security. Without one,
  ` + "`--raft-listen`" + ` (default ` + "`127.0.0.1:9093`" + `) is the Raft listener. Kafka's other KRaft
  properties (` + "`process.roles`" + `, ` + "`controller.quorum.voters`" + `) are warnings: the quorum comes
  from ` + "`--voters`" + ` and ` + "`--join`" + `.
* **Metrics**: ` + "`--metrics-listen`" + ` (default 127.0.0.1 on port 9644 + node id, so nodes on one
  host never collide; ` + "`\"\"`" + ` for none). DescribeConfigs reports the bound address as
  ` + "`petrel.metrics.listener`" + `.

## Checks at start

Every supplied property is checked before the node opens anything, with Kafka's parsing
(values trimmed; booleans ` + "`true`" + ` or ` + "`false`" + ` in any case; lists split at commas) and
Kafka's wording:

* A value outside its type or validator stops the server:
  ` + "`Invalid value -5 for configuration log.segment.bytes: Value must be at least 14`" + `,
  ` + "`Invalid value abc for configuration num.partitions: Not a number of type INT`" + `,
  ` + "`Invalid value brotli for configuration compression.type: String must be one of: ...`" + `.
  A valid Kafka value that Petrel does not implement would be refused the same way
  (` + "`Petrel supports only ...`" + `); no property has such a value at present.
* An unknown name is a warning that names the closest known one:
  ` + "`The configuration 'log.retention.hour' was supplied (--set) but isn't a known config; did you mean log.retention.hours?`" + `.
  A topic config given as a broker property suggests its broker synonym
  (` + "`retention.ms`" + ` → ` + "`log.retention.ms`" + `).
* A Kafka property Petrel knows but does not implement yet (the list below) is a warning
  that says so; so is a property a flag supplies (` + "`node.id`" + ` comes from ` + "`--node-id`" + `).
* ` + "`--strict-config`" + ` turns every warning into an error: the server does not start.

The same checks apply to the topic configs of CreateTopics: a bad value is INVALID_CONFIG
with the same message, an unknown name is ` + "`Unknown topic config name: NAME`" + `.

## Seeing the effective configuration

` + "`petrel server ... --print-config`" + ` runs the checks above, prints every broker property with
its value and source, then exits without starting:

    $ petrel server --data-dir d --set log.retention.hours=1 --print-config
    PROPERTY                    VALUE          SOURCE
    ...
    log.retention.hours         1              --set
    log.retention.ms            3600000        --set (log.retention.hours=1)
    ...

A value derived from another property shows it in brackets, as Kafka's config synonyms
do. Supplied properties that Petrel does not act on follow the table, marked ` + "`unknown`" + `,
` + "`not implemented`" + ` or ` + "`ignored`" + `; secrets (passwords, JAAS configs) print as ` + "`[hidden]`" + `.
A running broker answers DescribeConfigs (` + "`kafka-configs.sh --describe --all`" + `) with the
same values, sources and synonyms.

## Changing broker properties at run time

IncrementalAlterConfigs and AlterConfigs (` + "`kafka-configs.sh --alter --entity-type brokers`" + `,
` + "`petrel configs alter`" + `) change a broker property at run time by Kafka's rules (its
` + "`Dynamic Update Mode`" + `): for one broker (` + "`--entity-name 0`" + `) or as the cluster
default (` + "`--entity-default`" + `). A property Kafka reads only at start is refused with
` + "`Cannot update these configs dynamically: Set(NAME)`" + `; a per-broker one named for the
cluster default with ` + "`broker id must be specified`" + `; an SSL one without its
` + "`listener.name.<l>.`" + ` prefix with ` + "`only per-listener`" + `. The properties below not marked
read-only change at run time, from their next use: the topic configs' broker defaults,
the replication throttles, the connection limits, ` + "`log.cleaner.threads`" + `,
` + "`log.cleaner.dedupe.buffer.size`" + `, ` + "`log.cleaner.io.max.bytes.per.second`" + `,
` + "`log.cleaner.backoff.ms`" + `, ` + "`producer.id.expiration.ms`" + ` and
` + "`transaction.partition.verification.enable`" + `. Kafka also changes ` + "`listeners`" + `,
` + "`listener.security.protocol.map`" + `, the listeners' SASL and SSL settings and
` + "`log.retention.hours`" + `/` + "`minutes`" + `/` + "`log.roll.hours`" + ` at run time; Petrel reads those at
start and refuses a change with a message saying to restart with the new value (or to
change ` + "`log.retention.ms`" + `/` + "`log.roll.ms`" + `). A Kafka property Petrel knows but does not act on
(the list below) that Kafka changes at run time (` + "`num.io.threads`" + `,
` + "`sasl.kerberos.min.time.before.relogin`" + `, ...) is stored, listed by DescribeConfigs and
logged as inert, as it is accepted with a warning at start, so tools that set Kafka's
full property set work.
`
