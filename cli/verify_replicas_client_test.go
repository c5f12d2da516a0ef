package cli

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/petrel-broker/petrel/broker"
	ucli "github.com/urfave/cli/v2"
)

// `petrel verify replicas` reaches a SASL listener: its per-broker clients take the
// command's connection flags (SASL/PLAIN from --command-config) and are offered
// ReplicaDigests, which a broker advertises to Petrel's CLI alone.
func TestVerifyReplicasClientOverSASL(t *testing.T) {
	b := startBroker(t, map[string]string{
		"listeners":               "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
		"sasl.enabled.mechanisms": "PLAIN", "petrel.raft.security.protocol": "PLAINTEXT",
		"listener.name.sasl_plaintext.plain.sasl.jaas.config": `org.apache.kafka.common.security.plain.PlainLoginModule required user_ops="ops-secret";`})
	bs := bootstrap(b)
	mustRun(t, "", "topics", "create", bs, "--topic", "v", "--partitions", "1")
	mustRun(t, "one\ntwo\nthree\n", "produce", bs, "--topic", "v")
	props := filepath.Join(t.TempDir(), "client.properties")
	if err := os.WriteFile(props, []byte("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\nsasl.username=ops\nsasl.password=ops-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	sasl := b.ListenerAddr("SASL_PLAINTEXT").String()
	var got broker.ReplicaDigestsResponsePartition
	app := &ucli.App{Flags: verifyReplicasCommand().Flags, Action: func(c *ucli.Context) error {
		dc := newDigestClients(c, map[int32]string{0: sasl})
		defer dc.close()
		p, err := dc.digests(context.Background(), 0, "v", 0, 0, 3, broker.ReplicaDigestsChunkBytes)
		got = p
		return err
	}}
	if err := app.Run([]string{"petrel", "--bootstrap-server=" + sasl, "--command-config", props, "--timeout", "20s"}); err != nil {
		t.Fatalf("ReplicaDigests over SASL_PLAINTEXT: %v", err)
	}
	if got.HighWatermark != 3 || len(got.Chunks) == 0 {
		t.Fatalf("digests over SASL: %+v, want the high watermark 3 and a chunk", got)
	}
}
